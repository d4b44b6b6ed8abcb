//! What a [`Composite`] shows: the state an episode starts from, the tools visible in
//! a state (surfaced, loaded, allowed), the context of each request, and the selection
//! step's requests and their effect.

use std::sync::Arc;

use crate::catalog::Address;
use crate::wire::{Context, Message, ToolDef};

use crate::strategy::mode::Placement;
use crate::strategy::protocol::{Retrieved, State};
use crate::strategy::selection::{self, Level};
use crate::strategy::templates::TemplateError;

use super::build::{Composite, REQUEST_TOOLS_CACHE};
use crate::hash::{FastMap, FastSet};

impl Composite {
    /// Whether the mode holds tools back until a search or retrieval surfaces them
    /// (tool search, retrieval): then the visible list is what was surfaced, with no
    /// `request_tools`, and a call outside it is refused as never surfaced.
    pub fn holds_back(&self) -> bool {
        self.initial.is_some()
    }

    /// Whether a call of `tool` finds it loaded (always, when nothing was filtered).
    pub fn is_loaded(&self, state: &State, tool: &str) -> bool {
        state
            .active
            .as_ref()
            .is_none_or(|a| a.iter().any(|n| n == tool))
            || (tool == selection::REQUEST_TOOLS && !self.holds_back())
    }

    /// Retrieval, before the model is asked: the tools retrieved for the query join
    /// the visible ones (in registry order, since nothing was sent yet). Returns what
    /// was retrieved, for the outcome.
    pub fn at_query(&self, query: &str, state: &mut State) -> Vec<Retrieved> {
        let got: Vec<Retrieved> = self.parts.iter().flat_map(|p| p.at_query(query)).collect();
        if !got.is_empty() {
            let names: Vec<String> = got.iter().map(|r| r.tool.clone()).collect();
            self.join(state, &names, Placement::Sorted);
        }
        got
    }

    /// Tools that join the visible ones (tool search, retrieval): appended after what
    /// was sent, or sorted into registry order.
    pub(super) fn join(&self, state: &mut State, names: &[String], placement: Placement) {
        let Some(active) = state.active.as_mut() else {
            return;
        };
        let mut added = false;
        for n in names {
            if !active.contains(n) && self.owner.contains_key(n) {
                active.push(n.clone());
                added = true;
            }
        }
        if !added {
            return;
        }
        if placement == Placement::Sorted {
            let index: FastMap<&str, usize> = self
                .tools
                .iter()
                .enumerate()
                .map(|(i, t)| (t.name.as_str(), i))
                .collect();
            active.sort_by_key(|n| index.get(n.as_str()).copied().unwrap_or(usize::MAX));
        }
        state.selected = active.len();
        self.mark_active_shown(state);
    }

    /// A fresh episode: what is shown before the model does anything (with tool
    /// search or retrieval, only the tools not held back).
    pub fn new_state(&self) -> State {
        let mut st = self.base_state();
        if let Some(initial) = &self.initial {
            st.active = Some(initial.clone());
            st.selected = initial.len();
            self.mark_active_shown(&mut st);
        }
        st
    }

    /// A conversation's catalog grew at this turn (its `adds`) and this composite,
    /// rendered from the larger catalog, takes over: what it shows up front joins what
    /// `state` holds (definitions shown, inlined skills, tools visible from the start);
    /// everything else the episode did carries over.
    pub fn grow(&self, state: &mut State) {
        let fresh = self.new_state();
        state.shown.extend(fresh.shown);
        state.loaded_skills.extend(fresh.loaded_skills);
        if let (Some(active), Some(initial)) = (state.active.as_mut(), &self.initial) {
            for n in initial {
                if !active.contains(n) {
                    active.push(n.clone());
                }
            }
        }
    }

    /// A new user turn under the selection step: as FIM One builds a new agent for
    /// each message, the tools loaded are the mode's starting set again (the step's
    /// pick, which follows, replaces them; an unusable pick keeps them all), and what
    /// `request_tools` loaded in earlier turns is gone.
    pub fn new_turn(&self, state: &mut State) {
        let fresh = self.new_state();
        state.active = fresh.active;
        state.selected = fresh.selected;
        self.mark_active_shown(state);
    }

    /// What every part shows up front, before anything is held back.
    pub(super) fn base_state(&self) -> State {
        self.base().0.clone()
    }

    pub(super) fn base(&self) -> &(State, FastMap<Address, Option<String>>) {
        self.base.get_or_init(|| {
            let st = self.up_front();
            let tops = st
                .shown
                .iter()
                .map(|a| (a.clone(), self.top_level_tool_of(a)))
                .collect();
            (st, tops)
        })
    }

    pub(super) fn up_front(&self) -> State {
        let mut st = State::default();
        for p in &self.parts {
            for a in p.shown_up_front() {
                if let Address::Skill(n) = &a {
                    st.loaded_skills.insert(n.clone());
                }
                st.shown.insert(a);
            }
        }
        st
    }

    /// The tool list of the next request (shared, not copied, while every tool is
    /// loaded).
    pub fn visible_tools(&self, state: &State) -> Arc<[ToolDef]> {
        if self.mode.allowed && state.active.is_some() {
            return self
                .allowed_list
                .get_or_init(|| {
                    let all: Vec<String> = self.tools.iter().map(|t| t.name.clone()).collect();
                    let mut v: Vec<ToolDef> = self.tools.to_vec();
                    v.extend(self.request_tools_for(&all));
                    v.into()
                })
                .clone();
        }
        let Some(active) = &state.active else {
            return self.tools.clone();
        };
        if let Some(v) = state.visible.get(self.id, active, state.selected) {
            return v;
        }
        let def = |n: &String| self.tools.iter().find(|t| &t.name == n).cloned();
        let v: Arc<[ToolDef]> = if self.holds_back() {
            // Held back: the visible tools in the order they entered, no request_tools.
            active.iter().filter_map(def).collect()
        } else {
            let split = state.selected.min(active.len());
            let mut v: Vec<ToolDef> = active[..split].iter().filter_map(def).collect();
            if let Some(rt) = self.request_tools_for(active) {
                v.push(rt);
            }
            v.extend(active[split..].iter().filter_map(def));
            v.into()
        };
        state
            .visible
            .put(self.id, active, state.selected, v.clone());
        v
    }

    /// `request_tools` for a loaded set, rendered once per set. `check_templates`
    /// rendered its template before the run, so a failure here cannot come from the
    /// template: the tool is then simply left out.
    pub(super) fn request_tools_for(&self, active: &[String]) -> Option<ToolDef> {
        let mut key = active.to_vec();
        key.sort();
        let mut cache = self.request_tools.lock().expect("request_tools cache");
        if let Some(def) = cache.get(&key) {
            return Some(def.clone());
        }
        let shorts = self
            .request_shorts
            .get_or_init(|| selection::request_tools_shorts(&self.tools));
        let def =
            selection::request_tools_def_with(&self.tools, shorts, active, &self.templates).ok()?;
        if cache.len() < REQUEST_TOOLS_CACHE {
            cache.insert(key, def.clone());
        }
        Some(def)
    }

    /// Renders the templates used only while a run goes on (the selection request and
    /// `request_tools`), so that a broken override fails before anything runs.
    pub fn check_templates(&self) -> Result<(), TemplateError> {
        if !self.selection_applies() {
            return Ok(());
        }
        let cx = self.selection_context("a query", Level::Forced)?;
        self.selection_context("a query", Level::Json)?;
        self.selection_context("a query", Level::Text)?;
        self.selection_retry(&cx, "an answer")?;
        selection::request_tools_def(&self.tools, &[], &self.templates)?;
        let all: Vec<String> = self.tools.iter().map(|t| t.name.clone()).collect();
        selection::request_tools_def(&self.tools, &all, &self.templates)?;
        Ok(())
    }

    /// The context of the next request, holding `messages` (the history, moved in:
    /// the runner takes it back after the answer).
    pub fn context(&self, state: &State, messages: Vec<Message>) -> Context {
        Context {
            system: self.system.clone(),
            tools: self.visible_tools(state),
            tool_choice: None,
            json_mode: false,
            messages,
            allowed: self.allowed_names(state),
            native: self.native.clone(),
            groups: self.groups.clone(),
        }
    }

    /// `allowed=on`: the tools that may be called (the loaded ones and
    /// `request_tools`); `None` when the mode limits nothing or everything is loaded.
    pub fn allowed_names(&self, state: &State) -> Option<Vec<String>> {
        if !self.mode.allowed {
            return None;
        }
        state.active.as_ref().map(|a| {
            let mut v = a.clone();
            v.push(selection::REQUEST_TOOLS.to_string());
            v
        })
    }

    /// The keyword shortcut of the selection step: the tools to keep with no model
    /// call, or `None` to ask the model.
    pub fn selection_shortcut(&self, query: &str) -> Option<Vec<String>> {
        selection::keyword_shortcut(
            &self.tools,
            &self.tool_words,
            query,
            self.config.selection.max,
        )
    }

    /// The selection step's request at one level: the query and a compact catalog.
    pub fn selection_context(&self, query: &str, level: Level) -> Result<Context, TemplateError> {
        selection::context(
            &self.catalog_text,
            query,
            self.config.selection,
            level,
            &self.templates,
        )
    }

    /// The plain-text selection request asked again after an unreadable `answer`.
    pub fn selection_retry(&self, cx: &Context, answer: &str) -> Result<Context, TemplateError> {
        selection::retry_context(cx, answer, &self.templates)
    }

    /// Applies the names the selection step picked (`None`: no usable answer). Returns
    /// the tools loaded, pinned ones included, or `None` when every tool stays loaded
    /// (no usable answer, or no known name in it).
    pub fn apply_selection(
        &self,
        state: &mut State,
        picked: Option<&[String]>,
    ) -> Option<Vec<String>> {
        let loaded = selection::loaded_for(picked?, &self.tools, self.config.selection.max)?;
        state.selected = loaded.len();
        state.active = Some(loaded.clone());
        self.mark_active_shown(state);
        Some(loaded)
    }

    /// Addresses of definitions that are loaded directly as tools are "shown" only while
    /// their tool is active; recompute after the active set changes.
    pub(super) fn mark_active_shown(&self, state: &mut State) {
        let (fresh, tops) = self.base();
        // `allowed=on` sends every definition whatever may be called.
        let active: Option<FastSet<&str>> = if self.mode.allowed {
            None
        } else {
            state
                .active
                .as_ref()
                .map(|a| a.iter().map(String::as_str).collect())
        };
        // In place: what no part shows up front stays as it is; each address shown up
        // front is in while its tool is active (no clone of the whole set: a view
        // of 10,000 tools shows as many addresses).
        for a in &fresh.shown {
            let tool = &tops[a];
            let on = active
                .as_ref()
                .is_none_or(|set| tool.as_ref().is_none_or(|t| set.contains(t.as_str())));
            if !on {
                state.shown.remove(a);
            } else if !state.shown.contains(a) {
                state.shown.insert(a.clone());
            }
        }
    }
}
