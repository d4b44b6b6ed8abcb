//! Reference SQL run on the seeded databases: an expectation's `sql` must run, and
//! its rows are what a model's query is judged against.

use std::path::Path;

use crate::catalog::{Address, Catalog};
use crate::environment::Databases;
use crate::scenario::types::Query;

use super::checker::{Checker, Kind2};

impl Checker {
    /// Seeds each database and checks declared tables and reference SQL against it.
    pub(crate) fn check_sql(&mut self, file: &Path, cat: &Catalog, queries: &[Query]) {
        // Errors about a database name the file and path that define it (often an
        // included fragment), not the scenario that includes it.
        let defined_at = |me: &Self, db: &str| {
            me.origins
                .get(&(Kind2::Database, db.to_string()))
                .cloned()
                .unwrap_or_else(|| (file.to_path_buf(), "catalog.databases".to_string()))
        };
        let dbs = match Databases::build(cat) {
            Ok(d) => d,
            Err(e) => {
                let e = e.to_string();
                let db = cat
                    .databases
                    .iter()
                    .find(|d| e.starts_with(&format!("{}: ", d.name)));
                let (f, p) = match db {
                    Some(d) => {
                        let (f, p) = defined_at(self, &d.name);
                        (f, format!("{p}.seed_sql"))
                    }
                    None => (file.to_path_buf(), "catalog.databases".to_string()),
                };
                return self.err(&f, &p, e);
            }
        };
        for (db, problems) in dbs.schema_mismatches(cat) {
            let (f, p) = defined_at(self, &db);
            for problem in problems {
                self.err(&f, &format!("{p}.tables"), problem);
            }
        }
        for (i, q) in queries.iter().enumerate() {
            for (t, e) in q.expects().enumerate() {
                let ep = q.expect_path(i, t);
                self.reference_sql(file, &dbs, &ep, e);
            }
        }
    }

    /// The reference SQL of one expectation (at `ep`), run.
    fn reference_sql(
        &mut self,
        file: &Path,
        dbs: &Databases,
        ep: &str,
        e: &crate::scenario::Expect,
    ) {
        {
            for (j, c) in e.all_alternatives().enumerate() {
                if let (Address::Database(db), Some(sql)) = (&c.address, &c.sql) {
                    match dbs.query(db, sql) {
                        Ok(r) if r.rows.is_empty() => self.err(
                            file,
                            &format!("{ep}.calls[{j}].sql"),
                            "the reference SQL returns no rows, so it cannot tell right from wrong",
                        ),
                        Ok(_) => {}
                        Err(e) => self.err_at(
                            file,
                            &format!("{ep}.calls[{j}].sql"),
                            sql,
                            1,
                            format!("the reference SQL fails: {e}"),
                        ),
                    }
                }
            }
        }
    }
}
