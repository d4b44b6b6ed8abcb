// discbench report page: the answer (per scenario a chart whose points tell their numbers
// on hover or focus, and a modes x models matrix of the metric the reader picks), the
// groups table (sortable, filterable, rare columns folded), the outcome explorer and its
// drill-down, and the `#selftest` hook the browser test drives. No network request: the
// groups' numbers are embedded as JSON (#d-groups), the explorer's data as
// gzip-compressed JSON (see src/report/explorer.rs) expanded here with
// DecompressionStream, a part at a time.
(function(){
  'use strict';
  var LAYERS=['system','tool_defs','query','fetched','results','output'];
  function esc(s){return String(s).replace(/[&<>"']/g,function(c){return {'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;',"'":'&#39;'}[c];});}
  function fmt(n){return Number(n).toLocaleString('en-US');}

  // ---- summary tables: click a header to sort --------------------------------------
  function cellValue(td){var v=td.getAttribute('data-v');if(v!==null&&v!==''&&!isNaN(+v))return +v;return td.textContent.trim().toLowerCase();}
  function sortTable(table,col,dir){
    var body=table.tBodies[0];var rows=Array.prototype.slice.call(body.rows);
    rows.sort(function(a,b){var x=cellValue(a.cells[col]),y=cellValue(b.cells[col]);
      if(typeof x==='number'&&typeof y==='number')return dir*(x-y);return dir*String(x).localeCompare(String(y));});
    rows.forEach(function(r){body.appendChild(r);});
    Array.prototype.forEach.call(table.tHead.rows[0].cells,function(th,i){th.classList.remove('asc','desc');if(i===col)th.classList.add(dir>0?'asc':'desc');});
  }
  window.discbenchSort=sortTable;
  document.querySelectorAll('table.sortable').forEach(function(table){
    Array.prototype.forEach.call(table.tHead.rows[0].cells,function(th,i){
      th.addEventListener('click',function(){sortTable(table,i,th.classList.contains('asc')?-1:1);});});});

  function pct(x){return (x*100).toFixed(1)+'%';}
  // Whole tokens as the other reports print them (Rust's {:.0}: halves to even).
  function whole(x){var r=Math.round(x);if(Math.abs(x-Math.trunc(x))===0.5&&r%2!==0)r-=1;return r;}

  // ---- the answer: scenario switch, tooltips, metric matrix ---------------------------
  var G=null;
  (function(){var el=document.getElementById('d-groups');if(el)G=JSON.parse(el.textContent);})();
  var METRIC={};if(G)G.metrics.forEach(function(m){METRIC[m[0]]=m;});
  var answer=document.getElementById('answer');
  var tip=document.getElementById('tip');
  function metricText(kind,v){
    switch(kind){
      case 'rate':case 'pct':return pct(v[0]);
      case 'f3':return v[0].toFixed(3);
      case 'tok':return fmt(whole(v[0]));
      case 'delta':return (v[0]>=0?'+':'')+(v[0]*100).toFixed(1)+'%';
      case 'usd':return '$'+v[0].toFixed(4);
    }
    return String(v[0]);
  }
  // One scenario's matrix: modes down, models across, shaded from the worst value of the
  // scenario (white) to the best (green), the best mode of each model in bold.
  function drawMatrix(table,key){
    var m=METRIC[key];if(!m||!G)return;
    var sc=table.getAttribute('data-scenario'),better=m[3]?1:-1;
    var gs=G.groups.filter(function(g){return g.s===sc;});
    var modes=[],models=[],at={};
    gs.forEach(function(g){if(modes.indexOf(g.m)<0)modes.push(g.m);if(models.indexOf(g.md)<0)models.push(g.md);at[g.m+'\u0000'+g.md]=g;});
    var vals=gs.map(function(g){return g.v[key];}).filter(Boolean).map(function(v){return v[0];});
    var lo=Math.min.apply(null,vals),hi=Math.max.apply(null,vals),best={};
    models.forEach(function(md){modes.forEach(function(mo){var g=at[mo+'\u0000'+md],v=g&&g.v[key];
      if(v&&(best[md]===undefined||better*(v[0]-best[md])>0))best[md]=v[0];});});
    var h='<thead><tr><th class=l>mode \u2193 model \u2192</th>';
    models.forEach(function(md){h+='<th>'+esc(md)+'</th>';});
    h+='</tr></thead><tbody>';
    modes.forEach(function(mo){
      h+='<tr><th class=l><i class=sw style="background:'+esc(G.colors[mo]||'#888')+'"></i>'+esc(mo)+'</th>';
      models.forEach(function(md){
        var g=at[mo+'\u0000'+md],v=g&&g.v[key];
        if(!v){h+='<td title="'+(g?'no value for this group':'not run')+'">-</td>';return;}
        var t=hi>lo?(better>0?(v[0]-lo)/(hi-lo):(hi-v[0])/(hi-lo)):0;
        var style=hi>lo?' style="background:rgba(30,123,52,'+(0.05+0.35*t).toFixed(3)+')"':'';
        var cls=hi>lo&&v[0]===best[md]?' class=best':'';
        h+='<td data-v="'+v[0]+'"'+style+cls+' title="'+esc(mo+' \u00b7 '+md+', n '+g.n)+'">'+metricText(m[2],v)+(m[2]==='rate'&&v.length>2?'<small>['+pct(v[1])+', '+pct(v[2])+']</small>':'')+'</td>';
      });
      h+='</tr>';
    });
    table.innerHTML=h+'</tbody>';
    table.setAttribute('data-metric',key);
  }
  function setMetric(key){
    if(!answer)return;
    answer.querySelectorAll('select[name=metric]').forEach(function(s){s.value=key;});
    answer.querySelectorAll('table.matrix').forEach(function(t){drawMatrix(t,key);});
  }
  function hideTip(){if(tip)tip.hidden=true;}
  // A point's numbers, from its data-* attributes, beside the point.
  function showTip(pt){
    var d=pt.dataset,svg=pt.ownerSVGElement;
    var h='<b>'+esc(d.mode)+' \u00b7 '+esc(d.model)+'</b><br>exact match '+pct(+d.exact)+' ['+pct(+d.lo)+', '+pct(+d.hi)+'] (95% CI)'+
      '<br>billed input '+fmt(whole(+d.billed))+' tokens (median; p95 '+fmt(whole(+d.p95))+')'+
      '<br>first request '+fmt(whole(+d.first))+' tokens \u00b7 n '+d.n+(+d.infra?' (+'+d.infra+' infra errors)':'')+
      (d.front==='1'?'<br>best trade-off for '+esc(d.model)+': no other mode is both cheaper and as accurate':'');
    var same=Array.prototype.filter.call(svg.querySelectorAll('.pt'),function(o){return o!==pt&&o.dataset.billed===d.billed&&o.dataset.exact===d.exact;});
    if(same.length)h+='<br>same point: '+same.map(function(o){return esc(o.dataset.mode+' \u00b7 '+o.dataset.model);}).join(', ');
    tip.innerHTML=h;tip.hidden=false;
    var box=answer.getBoundingClientRect(),r=pt.getBoundingClientRect();
    var left=r.right-box.left+8,top=r.top-box.top-8;
    if(left+tip.offsetWidth>box.width-8)left=r.left-box.left-tip.offsetWidth-8;
    tip.style.left=Math.max(4,left)+'px';tip.style.top=Math.max(4,top)+'px';
  }
  function showScenario(sc){
    answer.querySelectorAll('.tabs button').forEach(function(b){b.setAttribute('aria-selected',String(b.getAttribute('data-scenario')===sc));});
    answer.querySelectorAll('.panel').forEach(function(p){p.hidden=p.getAttribute('data-scenario')!==sc;});
    hideTip();
  }
  if(answer&&G){
    answer.querySelectorAll('select[name=metric]').forEach(function(sel){
      G.metrics.forEach(function(m){var o=document.createElement('option');o.value=m[0];o.textContent=m[1];sel.appendChild(o);});
      sel.addEventListener('change',function(){setMetric(sel.value);});
    });
    setMetric('exact');
    answer.querySelectorAll('.tabs button').forEach(function(b){b.addEventListener('click',function(){showScenario(b.getAttribute('data-scenario'));});});
    answer.querySelectorAll('svg.answer-chart').forEach(function(svg){
      svg.addEventListener('mouseover',function(e){var pt=e.target.closest('.pt');if(pt)showTip(pt);});
      svg.addEventListener('mouseout',function(e){var pt=e.target.closest('.pt');if(pt&&!(e.relatedTarget&&pt.contains(e.relatedTarget)))hideTip();});
      svg.addEventListener('focusin',function(e){var pt=e.target.closest('.pt');if(pt)showTip(pt);});
      svg.addEventListener('focusout',hideTip);
    });
  }

  // ---- the groups table: filters and the folded columns --------------------------------
  var gt=document.querySelector('table.groups'),gf=document.getElementById('group-filters');
  var FILTERS=[['g-sc','sc'],['g-mode','mode'],['g-model','model']];
  function groupRows(){return gt?Array.prototype.slice.call(gt.tBodies[0].rows):[];}
  function filterGroups(){
    var want={};FILTERS.forEach(function(f){want[f[1]]=gf.querySelector('[name='+f[0]+']').value;});
    var rows=groupRows(),shown=0;
    rows.forEach(function(r){var ok=FILTERS.every(function(f){return !want[f[1]]||r.dataset[f[1]]===want[f[1]];});r.hidden=!ok;if(ok)shown++;});
    gf.querySelector('.count').textContent=shown===rows.length?rows.length+' groups':shown+' of '+rows.length+' groups';
  }
  function setGroupFilter(name,value){var sel=gf.querySelector('[name='+name+']');sel.value=value;filterGroups();}
  if(gt&&gf){
    FILTERS.forEach(function(f){
      var sel=gf.querySelector('[name='+f[0]+']'),seen=[];
      groupRows().forEach(function(r){var v=r.dataset[f[1]];if(seen.indexOf(v)<0)seen.push(v);});
      seen.forEach(function(v){var o=document.createElement('option');o.value=v;o.textContent=v;sel.appendChild(o);});
      sel.addEventListener('change',filterGroups);
    });
    gf.querySelector('[name=g-more]').addEventListener('change',function(e){gt.classList.toggle('all',e.target.checked);});
    document.querySelectorAll('[data-filter-scenario]').forEach(function(b){b.addEventListener('click',function(){
      setGroupFilter('g-sc',b.getAttribute('data-filter-scenario'));document.getElementById('overview').scrollIntoView();});});
  }

  // ---- embedded data -----------------------------------------------------------------
  function bytes(id){
    var el=document.getElementById(id);if(!el)throw new Error('missing data block '+id);
    var bin=atob(el.textContent.trim());var u=new Uint8Array(bin.length);
    for(var i=0;i<bin.length;i++)u[i]=bin.charCodeAt(i);return u;
  }
  function inflate(id){
    return Promise.resolve().then(function(){
      var s=new Blob([bytes(id)]).stream().pipeThrough(new DecompressionStream('gzip'));
      return new Response(s).text();
    }).then(JSON.parse);
  }
  var cache={};
  function once(id){if(!cache[id])cache[id]=inflate(id);return cache[id];}
  var D=null;       // rows, dictionaries, contexts
  var S=null;       // strings, loaded on the first drill-down
  function strings(){return once('d-strings').then(function(s){S=s;return s;});}
  function detailOf(d){var c=Math.floor(d/D.chunk);return once('d-det-'+c).then(function(a){return a[d-c*D.chunk];});}

  // ---- the outcome explorer -----------------------------------------------------------
  var root=document.getElementById('outcomes');
  var state={sc:'',mode:'',model:'',result:'',repeat:'',text:'',col:-1,dir:1,page:0,size:100};
  var view=[],N=0,rank={};
  var RESULT=['✗','✓','infra'];
  // Columns: header, numeric?, value for sorting.
  var COLS=[
    ['scenario',false,function(i){return rank.sc[D.queries[D.cols.q[i]][0]];}],
    ['query',false,function(i){return rank.q[D.cols.q[i]];}],
    ['mode',false,function(i){return rank.mode[D.cols.m[i]];}],
    ['model',false,function(i){return rank.model[D.cols.md[i]];}],
    ['repeat',true,function(i){return D.cols.r[i];}],
    ['exact',true,function(i){return D.cols.x[i];}],
    ['F1',true,function(i){return D.cols.f[i];}],
    ['requests',true,function(i){return D.cols.tu[i];}],
    ['first-request tok',true,function(i){return D.cols.ft[i];}],
    ['billed in',true,function(i){return D.cols.bi[i];}],
    ['protocol errors',true,function(i){return D.cols.pe[i];}]
  ];
  // The alphabetical rank of each dictionary entry, so text columns sort as numbers.
  function ranks(list,key){var idx=list.map(function(_,i){return i;});
    idx.sort(function(a,b){var x=key(list[a]),y=key(list[b]);return x<y?-1:x>y?1:0;});
    var r=new Array(list.length);idx.forEach(function(v,k){r[v]=k;});return r;}
  function q(sel){return root.querySelector(sel);}
  function options(select,list){list.forEach(function(v,i){var o=document.createElement('option');o.value=String(i);o.textContent=v;select.appendChild(o);});}

  function apply(){
    var c=D.cols,want={};
    var text=state.text.trim().toLowerCase(),qok=null;
    if(text){qok=new Uint8Array(D.queries.length);D.queries.forEach(function(qq,i){
      if((qq[1]+' '+qq[2]+' '+qq[3].join(' ')).toLowerCase().indexOf(text)>=0)qok[i]=1;});}
    var sc=state.sc===''?-1:+state.sc,mode=state.mode===''?-1:+state.mode,model=state.model===''?-1:+state.model;
    var res=state.result===''?-1:+state.result,rep=state.repeat===''?-1:+state.repeat;
    view=[];
    for(var i=0;i<N;i++){
      if(sc>=0&&D.queries[c.q[i]][0]!==sc)continue;
      if(mode>=0&&c.m[i]!==mode)continue;
      if(model>=0&&c.md[i]!==model)continue;
      if(res>=0&&c.x[i]!==res)continue;
      if(rep>=0&&c.r[i]!==rep)continue;
      if(qok&&!qok[c.q[i]])continue;
      view.push(i);
    }
    if(state.col>=0){var get=COLS[state.col][2],dir=state.dir;
      var keys=new Float64Array(N);view.forEach(function(i){keys[i]=get(i);});
      view.sort(function(a,b){return dir*(keys[a]-keys[b])||(a-b);});}
    state.page=Math.min(state.page,Math.max(0,Math.ceil(view.length/state.size)-1));
    draw();
  }
  function draw(){
    var c=D.cols,from=state.page*state.size,to=Math.min(view.length,from+state.size);
    var h=[];
    for(var k=from;k<to;k++){var i=view[k],qq=D.queries[c.q[i]];
      h.push('<tr class=row data-i='+i+'><td class=l>'+esc(D.scenarios[qq[0]])+'</td><td class=l title="'+esc(qq[2])+'">'+esc(qq[1])+'</td><td class=l>'+esc(D.modes[c.m[i]])+'</td><td class=l>'+esc(D.models[c.md[i]])+'</td><td>'+c.r[i]+'</td><td class='+(c.x[i]===1?'ok':'no')+'>'+RESULT[c.x[i]]+'</td><td>'+(c.f[i]/1000).toFixed(2)+'</td><td>'+c.tu[i]+'</td><td>'+fmt(c.ft[i])+'</td><td>'+fmt(c.bi[i])+'</td><td>'+c.pe[i]+'</td></tr>');}
    q('tbody').innerHTML=h.join('');
    q('.count').textContent=view.length?('outcomes '+fmt(from+1)+'–'+fmt(to)+' of '+fmt(view.length)+(view.length<N?' (filtered from '+fmt(N)+')':'')):'no outcome matches';
    var ths=q('thead').rows[0].cells;
    for(var j=0;j<ths.length;j++){ths[j].classList.remove('asc','desc');if(j===state.col)ths[j].classList.add(state.dir>0?'asc':'desc');}
  }
  function open(tr){
    var next=tr.nextSibling;
    if(next&&next.classList.contains('detail-row')){next.remove();tr.classList.remove('open');return Promise.resolve(null);}
    var i=+tr.getAttribute('data-i');tr.classList.add('open');
    var row=document.createElement('tr');row.className='detail-row';
    row.innerHTML='<td class=detail colspan='+COLS.length+'>expanding…</td>';
    tr.parentNode.insertBefore(row,tr.nextSibling);
    return Promise.all([strings(),detailOf(D.cols.d[i])]).then(function(v){
      row.firstChild.innerHTML=detailHtml(i,v[1]);return row.firstChild;
    }).catch(function(e){row.firstChild.textContent='cannot expand this outcome: '+e;throw e;});
  }
  function key(i){var c=D.cols,qq=D.queries[c.q[i]];return D.scenarios[qq[0]]+'/'+qq[1]+'/'+D.modes[c.m[i]]+'/'+D.models[c.md[i]]+'#'+c.r[i];}
  function str(k){return k<0||k===undefined||k===null?'':S[k];}
  function mark(b){return b===1||b===true?'<span class=ok>✓</span>':b===0||b===false?'<span class=no>✗</span>':'-';}
  function isDef(e){return e[0]===1||(e[0]===3&&str(e[1]).indexOf('tool definition ')===0);}
  function detailHtml(i,d){
    var h='<div class=dt data-key="'+esc(key(i))+'">';
    var qq=D.queries[D.cols.q[i]];
    h+='<p class=facts><b>'+esc(key(i))+'</b> — '+esc(qq[2])+'</p>';
    h+='<p class=facts>expected: <code>'+esc(d.w.length?d.w.map(str).join(', '):'(no call)')+'</code><br>made: <code>'+esc(d.p.length?d.p.map(str).join(', '):'(no call)')+'</code><br>exact '+mark(d.x)+' · F1 '+(d.f/1000).toFixed(2)+' · args '+mark(d.a)+' · schema '+mark(d.s)+' · forbidden hit '+(d.h?'<span class=no>yes</span>':'no')+' · protocol errors '+d.pe+'</p>';
    var l=d.l;
    h+='<p class=facts>tokens: system '+fmt(l[0])+' · tool definitions '+fmt(l[1])+' · fetched '+fmt(l[2])+' · results '+fmt(l[3])+' · output '+fmt(l[4])+' · selection '+fmt(l[5])+' · first request '+fmt(l[6])+' · <span class=billed>billed input '+fmt(l[7])+'</span> · peak '+fmt(l[8])+' · billed, prefix cached '+fmt(l[9])+'</p>';
    if(d.sel){var s=d.sel;h+='<p class=facts>selection step ('+s[0]+' tools, '+fmt(s[1])+' tokens, '+(s[2]?'keyword shortcut, no model call':s[3]+' model request(s)')+'): '+esc(s[4]>=0?'kept '+str(s[4]):'no usable or an empty answer, all tools kept')+'</p>';}
    d.t.forEach(function(t,j){
      // A conversation: a heading where each user turn begins.
      (d.cv||[]).forEach(function(v){if(v[1]===j)h+='<h4 class=turn>turn '+v[0]+' — exact '+mark(v[3])+' · '+v[2]+' request(s) · billed input '+fmt(v[5])+' · billed, prefix cached '+fmt(v[6])+(v[4]>=0?' · <span class=no>'+esc(str(v[4]))+'</span>':'')+'</h4><p class=facts>expected in this turn: <code>'+esc(v[7].length?v[7].map(str).join(', '):'(no call)')+'</code><br>made: <code>'+esc(v[8].length?v[8].map(str).join(', '):'(no call)')+'</code></p>';});
      h+='<details class=request><summary>request '+t[0]+' — '+fmt(t[1])+' tokens, '+t[2]+' tools visible'+(t[3]?', '+fmt(t[3])+' cacheable':'')+'</summary><table><thead><tr><th class=l>layer</th><th class=l>what</th><th>tokens</th></tr></thead><tbody>';
      var defs=[];
      t[4].forEach(function(e){
        if(isDef(e)){defs.push(e);}
        var body=(!isDef(e)&&e[3]>=0)?'<pre>'+esc(str(e[3]))+'</pre>':'';
        h+='<tr><td class=l>'+LAYERS[e[0]]+'</td><td class=l><code>'+esc(str(e[1]))+'</code>'+body+'</td><td>'+fmt(e[2])+'</td></tr>';
      });
      h+='</tbody></table>';
      var withText=defs.filter(function(e){return e[3]>=0;});
      if(withText.length){var tok=0;defs.forEach(function(e){tok+=e[2];});
        h+='<details><summary>tool definitions that entered in request '+t[0]+' ('+defs.length+' tools, '+fmt(tok)+' tokens)</summary>';
        withText.forEach(function(e){h+='<details><summary><code>'+esc(str(e[1]).replace(/^tool definition /,''))+'</code> ('+fmt(e[2])+' tokens)</summary><pre>'+esc(str(e[3]))+'</pre></details>';});
        h+='</details>';}
      h+='</details>';
    });
    if(d.c.length){
      h+='<table class=calls><thead><tr><th>request</th><th class=l>call</th><th class=l>effect</th><th class=l>address</th><th class=l>note</th></tr></thead><tbody>';
      d.c.forEach(function(c,j){
        var cell='<code>'+esc(str(c[1]))+'('+esc(str(c[2]))+')</code>';
        // A program (code mode): its text, numbered; each call it made points back to it.
        if(str(c[3])==='program'){var code=str(c[2]);try{code=JSON.parse(code).code||code;}catch(e){}
          cell='<code>'+esc(str(c[1]))+'</code> program #'+(j+1)+'<pre>'+esc(code)+'</pre>';}
        if(c[7]>=0)cell='<span class=inprog>↳ in program #'+(c[7]+1)+'</span> '+cell;
        h+='<tr><td>'+c[0]+'</td><td class=l>'+cell+'</td><td class=l>'+esc(str(c[3]))+'</td><td class=l>'+esc(str(c[4]))+'</td><td class=l>'+esc(str(c[5]))+(c[6]?' (blind)':'')+'</td></tr>';});
      h+='</tbody></table>';
    }
    if(d.ft>=0)h+='<details><summary>final answer</summary><pre>'+esc(str(d.ft))+'</pre></details>';
    if(d.ie>=0)h+='<p class=bad>infra error: '+esc(str(d.ie))+'</p>';
    h+='<details><summary>expectation</summary><pre>'+esc(str(d.e))+'</pre></details>';
    return h+'</div>';
  }
  function contextsHtml(sc){
    var h='';
    D.contexts.forEach(function(cx){
      if(cx[0]!==sc)return;var mode=esc(D.modes[cx[1]]);
      if(cx[2])h+='<details><summary>system prompt under '+mode+' ('+fmt(cx[2][0])+' tokens)</summary><pre>'+esc(S[cx[2][1]])+'</pre></details>';
      if(cx[3]){var tok=0;cx[3].forEach(function(d){tok+=d[1];});
        h+='<details><summary>tool definitions under '+mode+' ('+cx[3].length+' tools, '+fmt(tok)+' tokens)</summary>';
        cx[3].forEach(function(d){h+='<details><summary><code>'+esc(S[d[0]])+'</code> ('+fmt(d[1])+' tokens)</summary><pre>'+esc(S[d[2]])+'</pre></details>';});
        h+='</details>';}
    });
    return h||'<p class=muted>No context text is recorded for this scenario; <code>discbench tokens SCENARIO --mode MODE --show</code> prints it.</p>';
  }
  function setFilter(name,value){var el=q('[name='+name+']');el.value=value;state[name]=value;state.page=0;apply();}

  var ready=(root?once('d-rows'):Promise.reject(new Error('no outcome explorer'))).then(function(data){
    D=data;N=D.cols.q.length;
    rank.sc=ranks(D.scenarios,function(s){return s;});
    rank.q=ranks(D.queries,function(x){return D.scenarios[x[0]]+'\u0000'+x[1];});
    rank.mode=ranks(D.modes,function(s){return s;});
    rank.model=ranks(D.models,function(s){return s;});
    options(q('[name=sc]'),D.scenarios);options(q('[name=mode]'),D.modes);options(q('[name=model]'),D.models);
    var reps=[];for(var i=0;i<N;i++)reps[D.cols.r[i]]=1;
    reps.forEach(function(_,r){var o=document.createElement('option');o.value=String(r);o.textContent=String(r);q('[name=repeat]').appendChild(o);});
    var head='<tr>';COLS.forEach(function(c){head+='<th'+(c[1]?' data-numeric=1':' class=l')+'>'+c[0]+'</th>';});
    q('thead').innerHTML=head+'</tr>';
    Array.prototype.forEach.call(q('thead').rows[0].cells,function(th,j){th.addEventListener('click',function(){
      state.dir=(state.col===j)?-state.dir:1;state.col=j;state.page=0;apply();});});
    ['sc','mode','model','result','repeat'].forEach(function(n){q('[name='+n+']').addEventListener('change',function(e){state[n]=e.target.value;state.page=0;apply();});});
    var timer=null;q('[name=text]').addEventListener('input',function(e){clearTimeout(timer);timer=setTimeout(function(){state.text=e.target.value;state.page=0;apply();},150);});
    q('[name=size]').addEventListener('change',function(e){state.size=+e.target.value;state.page=0;apply();});
    q('.prev').addEventListener('click',function(){if(state.page>0){state.page--;draw();}});
    q('.next').addEventListener('click',function(){if((state.page+1)*state.size<view.length){state.page++;draw();}});
    q('tbody').addEventListener('click',function(e){var tr=e.target.closest('tr.row');if(tr)open(tr);});
    document.querySelectorAll('[data-show-scenario]').forEach(function(b){b.addEventListener('click',function(){
      var i=D.scenarios.indexOf(b.getAttribute('data-show-scenario'));setFilter('sc',i<0?'':String(i));root.scrollIntoView();});});
    document.querySelectorAll('details.contexts').forEach(function(el){el.addEventListener('toggle',function(){
      if(!el.open||el.getAttribute('data-done'))return;el.setAttribute('data-done','1');
      var i=D.scenarios.indexOf(el.getAttribute('data-scenario'));
      strings().then(function(){el.querySelector('div').innerHTML=contextsHtml(i);});});});
    q('.status').textContent='';
    apply();
  });
  ready.catch(function(e){if(root)q('.status').textContent='The outcome table cannot be shown: '+e+' (this page needs a browser with DecompressionStream).';});

  // ---- #selftest: what the browser test checks ------------------------------------------
  // Sorts the summary table column with the most distinct values both ways; then, in the
  // explorer, filters to the last repeat, sorts billed input both ways, and opens the
  // first outcome's drill-down. The verdict is written into #selftest.
  function values(table,col){return Array.prototype.map.call(table.tBodies[0].rows,function(r){
    var c=r.cells[col];var a=c?c.getAttribute('data-v'):null;return (a===null||a==='')?NaN:+a;});}
  function pickColumn(){
    var best=null;
    document.querySelectorAll('table.sortable').forEach(function(table){
      if(!table.tHead||!table.tBodies[0])return;
      Array.prototype.forEach.call(table.tHead.rows[0].cells,function(th,i){
        if(th.getAttribute('data-numeric')!=='1')return;
        var v=values(table,i);
        if(v.length<2||v.some(function(x){return !isFinite(x);}))return;
        var distinct=v.filter(function(x,k){return v.indexOf(x)===k;}).length;
        if(distinct>1&&(!best||distinct>best.distinct))best={table:table,col:i,distinct:distinct};
      });
    });
    return best;
  }
  function sortCheck(errs){
    var pick=pickColumn();
    if(!pick){errs.push('no column with distinct values');return '';}
    var t=pick.table,col=pick.col,th=t.tHead.rows[0].cells[col];
    var what=th.textContent.trim();
    th.dispatchEvent(new MouseEvent('click',{bubbles:true}));
    var asc=values(t,col),ascRows=Array.prototype.slice.call(t.tBodies[0].rows);
    th.dispatchEvent(new MouseEvent('click',{bubbles:true}));
    var desc=values(t,col),descRows=Array.prototype.slice.call(t.tBodies[0].rows);
    for(var i=1;i<asc.length;i++){if(!(asc[i-1]<=asc[i]))errs.push(what+': ascending order broken at row '+i);}
    for(var j=1;j<desc.length;j++){if(!(desc[j-1]>=desc[j]))errs.push(what+': descending order broken at row '+j);}
    if(!(asc[0]<asc[asc.length-1]))errs.push(what+': the first click did not sort ascending');
    if(!(desc[0]>desc[desc.length-1]))errs.push(what+': the second click did not sort descending');
    if(ascRows.every(function(r,k){return r===descRows[k];}))errs.push(what+': the row order did not change between the two clicks');
    return what;
  }
  function explorerCheck(errs,out){
    return ready.then(function(){
      var last=0;for(var i=0;i<N;i++)if(D.cols.r[i]>last)last=D.cols.r[i];
      var sel=q('[name=repeat]');sel.value=String(last);sel.dispatchEvent(new Event('change'));
      var want=0;for(var k=0;k<N;k++)if(D.cols.r[k]===last)want++;
      if(view.length!==want)errs.push('repeat filter: '+view.length+' rows, expected '+want);
      if(view.some(function(i){return D.cols.r[i]!==last;}))errs.push('repeat filter let another repeat through');
      var col=9,th=q('thead').rows[0].cells[col];
      th.dispatchEvent(new MouseEvent('click',{bubbles:true}));
      var asc=view.map(function(i){return D.cols.bi[i];});
      th.dispatchEvent(new MouseEvent('click',{bubbles:true}));
      var desc=view.map(function(i){return D.cols.bi[i];});
      for(var a=1;a<asc.length;a++)if(asc[a-1]>asc[a]){errs.push('billed input: ascending broken at '+a);break;}
      for(var b=1;b<desc.length;b++)if(desc[b-1]<desc[b]){errs.push('billed input: descending broken at '+b);break;}
      var tr=q('tbody tr.row');
      if(!tr){errs.push('no outcome row to open');return;}
      var i0=+tr.getAttribute('data-i');
      if(D.cols.bi[i0]!==desc[0])errs.push('the first row drawn is not the first of the sorted view');
      out.setAttribute('data-rows',String(N));
      return open(tr).then(function(cell){
        var dt=cell&&cell.querySelector('.dt');
        if(!dt){errs.push('the drill-down did not render');return;}
        out.setAttribute('data-drilled',dt.getAttribute('data-key'));
        if(dt.querySelectorAll('details.request').length!==D.cols.tu[i0]&&D.cols.x[i0]!==2)errs.push('the drill-down shows '+dt.querySelectorAll('details.request').length+' requests, the row says '+D.cols.tu[i0]);
      });
    });
  }
  // The layout at the window's size: nothing wider than the window, with the folded
  // columns shown too, and the first chart inside the first viewport.
  function layoutCheck(errs,out){
    var de=document.documentElement;
    out.setAttribute('data-viewport',innerWidth+'x'+innerHeight);
    var over=de.scrollWidth-de.clientWidth;
    out.setAttribute('data-overflow',String(over));
    if(over>0)errs.push('the page scrolls sideways: '+de.scrollWidth+' > '+de.clientWidth);
    var more=gf&&gf.querySelector('[name=g-more]');
    if(more){more.click();
      var shown=gt.classList.contains('all')&&gt.querySelector('th.x').getClientRects().length>0;
      if(!shown)errs.push('"more columns" did not show the folded columns');
      var over2=de.scrollWidth-de.clientWidth;out.setAttribute('data-overflow-more',String(over2));
      if(over2>0)errs.push('with more columns the page scrolls sideways: '+de.scrollWidth+' > '+de.clientWidth);
      more.click();
      if(gt.querySelector('th.x').getClientRects().length)errs.push('"more columns" did not fold them again');}
    var svg=document.querySelector('svg.answer-chart');
    if(!svg){errs.push('no answer chart');return;}
    var r=svg.getBoundingClientRect(),top=r.top+scrollY,left=r.left+scrollX;
    out.setAttribute('data-chart',[left,top,r.width,r.height].map(Math.round).join(','));
    if(!(r.width>0&&r.height>0&&top>=0&&left>=0&&top+r.height<=innerHeight&&left+r.width<=innerWidth))
      errs.push('the first chart ('+out.getAttribute('data-chart')+') is not within the first viewport '+innerWidth+'x'+innerHeight);
  }
  // The smallest text of every chart as drawn: its font size times the SVG's scale on the
  // page, each scenario of the answer shown in turn.
  function fontCheck(errs,out){
    var min=Infinity,count=0,seen=[];
    function measure(){document.querySelectorAll('svg').forEach(function(svg){
      var r=svg.getBoundingClientRect();if(!r.width||seen.indexOf(svg)>=0)return;seen.push(svg);
      var vb=svg.viewBox&&svg.viewBox.baseVal,scale=vb&&vb.width?r.width/vb.width:1;
      svg.querySelectorAll('text').forEach(function(t){if(!t.textContent.trim())return;
        var px=parseFloat(getComputedStyle(t).fontSize)*scale;count++;if(px<min)min=px;});});}
    var tabs=answer?answer.querySelectorAll('.tabs button'):[];
    if(tabs.length){tabs.forEach(function(b){b.click();
        var p=answer.querySelector('.panel:not([hidden])');
        if(!p||p.getAttribute('data-scenario')!==b.getAttribute('data-scenario'))errs.push('the switch did not show '+b.textContent);
        measure();});
      tabs[0].click();}
    else measure();
    out.setAttribute('data-font-min',String(Math.round(min*100)/100));
    out.setAttribute('data-texts',String(count));
    if(!(min>=12))errs.push('chart text at '+min+' px');
  }
  // Hovering the first point of the first chart shows its numbers; leaving hides them.
  function hoverCheck(errs,out){
    var pts=document.querySelectorAll('.panel:not([hidden]) svg.answer-chart .pt'),pt=pts[0];
    if(!pt){errs.push('no point to hover');return;}
    // Each point is its error bar, its marker and the disc that takes the pointer, side by
    // side (an element left open in the markup would nest the rest and hide them).
    Array.prototype.forEach.call(pts,function(p){var k=p.children;
      if(k.length!==3||!(k[1].getBoundingClientRect().width>0))errs.push('the point '+p.dataset.mode+' / '+p.dataset.model+' is not drawn as bar, marker and target');});
    pt.dispatchEvent(new MouseEvent('mouseover',{bubbles:true}));
    var text=tip.hidden?'':tip.textContent,r=tip.getBoundingClientRect();
    if(tip.hidden||!r.width)errs.push('hovering a point shows nothing');
    [pt.dataset.mode,pt.dataset.model,pct(+pt.dataset.exact),pct(+pt.dataset.lo),pct(+pt.dataset.hi),fmt(whole(+pt.dataset.billed))].forEach(function(w){
      if(text.indexOf(w)<0)errs.push('the tooltip lacks '+w+': '+text);});
    out.setAttribute('data-hover',text);
    pt.dispatchEvent(new MouseEvent('mouseout',{bubbles:true,relatedTarget:document.body}));
    if(!tip.hidden)errs.push('the tooltip stays after the pointer leaves');
    var sel=answer.querySelector('.panel:not([hidden]) select[name=metric]'),m=answer.querySelector('.panel:not([hidden]) table.matrix');
    var before=m.textContent;sel.value='billed';sel.dispatchEvent(new Event('change'));
    if(m.getAttribute('data-metric')!=='billed'||m.textContent===before)errs.push('picking another metric did not change the matrix');
    out.setAttribute('data-matrix',Array.prototype.map.call(m.querySelectorAll('tbody td'),function(td){return td.textContent;}).join('|'));
    setMetric('exact');
  }
  // The groups table: filters show exactly the rows they name, sorting orders the rows
  // shown, and both change what is shown.
  function groupCheck(errs,out){
    if(!gt){errs.push('no groups table');return;}
    var rows=groupRows();
    function shown(){return groupRows().filter(function(r){return r.getClientRects().length>0;});}
    function keys(){return shown().map(function(r){return r.dataset.sc+'/'+r.dataset.mode+'/'+r.dataset.model;}).join(' ');}
    var all=keys(),notes=[];
    [['g-mode','mode',1],['g-sc','sc',1],['g-model','model',1]].forEach(function(f){
      var sel=gf.querySelector('[name='+f[0]+']');if(sel.options.length<=2)return;
      var v=sel.options[f[2]].value;sel.value=v;sel.dispatchEvent(new Event('change'));
      var want=rows.filter(function(r){return FILTERS.every(function(g){var x=gf.querySelector('[name='+g[0]+']').value;return !x||r.dataset[g[1]]===x;});}).length;
      var s=shown();
      if(s.length!==want)errs.push(f[1]+' filter: '+s.length+' rows shown, '+want+' expected');
      if(s.some(function(r){return r.dataset[f[1]]!==v;}))errs.push(f[1]+' filter let another '+f[1]+' through');
      notes.push(f[1]+'='+v+': '+s.length);
    });
    if(keys()===all)errs.push('filtering did not change the rows shown');
    out.setAttribute('data-filtered',notes.join('; ')+' of '+rows.length);
    // Sort what one mode's filter shows (every scenario and model of that mode).
    ['g-sc','g-model'].forEach(function(n){gf.querySelector('[name='+n+']').value='';});filterGroups();
    var col=-1;Array.prototype.forEach.call(gt.tHead.rows[0].cells,function(th,i){if(th.textContent.trim()==='billed in')col=i;});
    if(col<0){errs.push('no billed in column');return;}
    var th=gt.tHead.rows[0].cells[col],filtered=keys();
    function vals(){return shown().map(function(r){return +r.cells[col].getAttribute('data-v');});}
    th.dispatchEvent(new MouseEvent('click',{bubbles:true}));var asc=vals(),ka=keys();
    th.dispatchEvent(new MouseEvent('click',{bubbles:true}));var desc=vals(),kd=keys();
    for(var i=1;i<asc.length;i++)if(asc[i-1]>asc[i]){errs.push('filtered rows: billed in not ascending');break;}
    for(var j=1;j<desc.length;j++)if(desc[j-1]<desc[j]){errs.push('filtered rows: billed in not descending');break;}
    if(ka===kd&&asc[0]!==asc[asc.length-1])errs.push('sorting did not change the order of the rows shown');
    if(ka.split(' ').sort().join(' ')!==filtered.split(' ').sort().join(' '))errs.push('sorting changed which rows are shown');
    out.setAttribute('data-sorted',kd.split(' ')[0]+' first of '+desc.length);
    FILTERS.forEach(function(f){gf.querySelector('[name='+f[0]+']').value='';});filterGroups();
    if(shown().length!==rows.length)errs.push('clearing the filters did not show every row');
  }
  // The groups table's header stays in view while its rows scroll under it.
  function stickyCheck(errs,out){
    if(!gt||gt.tBodies[0].rows.length<3)return;
    var row=gt.tBodies[0].rows[Math.floor(gt.tBodies[0].rows.length/2)];
    scrollTo(0,row.getBoundingClientRect().top+scrollY);
    var th=gt.tHead.rows[0].cells[0].getBoundingClientRect().top,table=gt.getBoundingClientRect().top;
    out.setAttribute('data-sticky',Math.round(th)+' (table top '+Math.round(table)+')');
    if(!(table<-5&&Math.abs(th)<=1))errs.push('the groups header did not stay at the top: '+out.getAttribute('data-sticky'));
    scrollTo(0,0);
  }
  if(location.hash==='#selftest'){
    var out=document.getElementById('selftest');var errs=[];var what='';
    [layoutCheck,stickyCheck,fontCheck,hoverCheck,groupCheck].forEach(function(f){try{f(errs,out);}catch(e){errs.push(f.name+': '+e);}});
    try{what=sortCheck(errs);if(document.querySelectorAll('svg').length<1)errs.push('no chart');}catch(e){errs.push(String(e));}
    explorerCheck(errs,out).catch(function(e){errs.push('explorer: '+e);}).then(function(){
      if(window.__errors&&window.__errors.length)errs=errs.concat(window.__errors);
      out.setAttribute('data-column',what);
      out.textContent=errs.length?errs.join('; '):'layout, sticky header, chart text, hover, matrix, filters and sorting checked; sorted '+what+' ascending and descending; explorer filtered, sorted and expanded an outcome';
      out.setAttribute('data-result',errs.length?'fail':'pass');
    });
  }
})();
