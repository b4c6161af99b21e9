// collc view: draws the data embedded in the page (script#collc-data). No network, no library.
"use strict";
(function () {
  const DATA = JSON.parse(document.getElementById("collc-data").textContent);
  const SVGNS = "http://www.w3.org/2000/svg";
  const $ = (id) => document.getElementById(id);
  const el = (tag, attrs, parent) => {
    const e = document.createElement(tag);
    for (const k in attrs || {}) {
      if (k === "text") e.textContent = attrs[k];
      else e.setAttribute(k, attrs[k]);
    }
    if (parent) parent.appendChild(e);
    return e;
  };
  const sv = (tag, attrs, parent) => {
    const e = document.createElementNS(SVGNS, tag);
    for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  };
  const us = (ns) => (ns == null ? "-" : (ns / 1000).toLocaleString(undefined, {maximumFractionDigits: 3}) + " us");
  const bytes = (b) => {
    if (b == null) return "-";
    const u = ["B", "KiB", "MiB", "GiB", "TiB"];
    let i = 0;
    while (b >= 1024 && i < u.length - 1 && b % 1024 === 0) { b /= 1024; i++; }
    return b + " " + u[i];
  };
  // A perceptual ramp (dark blue -> green -> yellow) for loads 0..1.
  const RAMP = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];
  function ramp(x) {
    x = Math.max(0, Math.min(1, x)) * (RAMP.length - 1);
    const i = Math.min(RAMP.length - 2, Math.floor(x)), f = x - i;
    const a = RAMP[i], b = RAMP[i + 1];
    return [0, 1, 2].map((k) => Math.round(a[k] + (b[k] - a[k]) * f));
  }
  const rgb = (c) => "rgb(" + c.join(",") + ")";
  const hue = (k) => "hsl(" + ((k * 137.508) % 360).toFixed(0) + ",70%,45%)";
  const BUF = ["input", "output", "scratch"];
  const TAB10 = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];
  const series = (k) => (k < TAB10.length ? TAB10[k] : hue(k));

  // ---------------------------------------------------------------- one panel
  function Panel(p, index, root) {
    this.p = p;
    this.index = index;
    const L = p.links.src.length;
    this.L = L;
    const box = el("section", {class: "panel", id: "panel-" + index}, root);
    el("h2", {text: p.title}, box);
    summary(p, box);
    if (!p.exact) {
      el("p", {class: "aggregated", text:
        "Aggregated: this program has " + p.records_total.toLocaleString() +
        " link occupancies, more than " + p.max_records.toLocaleString() +
        " (--max-messages), so links list their messages as counts per time bin of " +
        us(p.bin_ns) + ", ranks show their activity per bin, and no chunks move."}, box);
    }
    const topo = el("div", {class: "topo"}, box);
    this.svg = sv("svg", {class: "topology", "data-npus": p.nodes.npus, "data-links": L}, topo);
    this.tip = el("div", {class: "tip", hidden: ""}, topo);
    this.info = el("div", {class: "info", id: "info-" + index}, box);
    el("p", {class: "hint", text: "Click a link to list its messages; hover an NPU for its operations."}, this.info);
    this.drawTopology();
    el("h3", {text: "Link load over time (rows: links, busiest first; per mille of each bin busy)"}, box);
    this.heat = el("canvas", {class: "heat"}, box);
    el("h3", {text: p.exact ? "Per-rank Gantt (sends above, receives below each rank's line; a receive from when its message was sent)" :
      "Per-rank activity (sends above, receives below; mean tasks in flight per bin)"}, box);
    this.gantt = el("canvas", {class: "gantt"}, box);
    el("h3", {text: "Critical path (" + p.critical.steps.length + " tasks)"}, box);
    this.critList = el("ol", {class: "critical"}, box);
    this.drawHeat();
    this.drawGantt();
    this.listCritical();
    if (p.exact) this.indexRecords();
  }

  function summary(p, box) {
    const t = el("table", {class: "summary"}, box);
    const row = (k, v) => { const r = el("tr", {}, t); el("th", {text: k}, r); el("td", {text: v}, r); };
    row("algorithm", p.algorithm);
    row("collective", p.collective + " over " + p.ranks + " ranks");
    row("size", bytes(p.size_bytes) + " (chunks of " + bytes(p.chunk_bytes) + ")");
    row("topology", p.topology);
    row("time", us(p.finish_ns) + " (sends complete " + p.completion + ")");
    row("lower bound", p.bound_ns ? us(p.bound_ns) + " (" + p.bound_name + ")" : "-");
    row("time / bound", p.ratio ? p.ratio.toFixed(3) + "x" : "-");
    row("busbw", p.busbw_gb_per_s ? p.busbw_gb_per_s.toFixed(2) + " GB/s" : "-");
    row("messages", p.messages.toLocaleString() + " (" + p.hops.toLocaleString() + " hops)");
    if (p.estimate_ns) row("producer's estimate", us(p.estimate_ns));
    for (const n of p.notes) row("note", n);
  }

  Panel.prototype.drawTopology = function () {
    const p = this.p, svg = this.svg, X = p.nodes.x, Y = p.nodes.y;
    let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
    for (let i = 0; i < X.length; i++) {
      x0 = Math.min(x0, X[i]); x1 = Math.max(x1, X[i]); y0 = Math.min(y0, Y[i]); y1 = Math.max(y1, Y[i]);
    }
    const m = 1.0;
    svg.setAttribute("viewBox", [x0 - m, y0 - m, x1 - x0 + 2 * m, y1 - y0 + 2 * m].join(" "));
    const span = Math.max(x1 - x0, y1 - y0, 1);
    const r = Math.min(0.2, Math.max(0.05, span / 150));
    this.r = r;
    const gl = sv("g", {class: "links"}, svg);
    this.linkEls = [];
    this.linkGeom = [];
    const off = r * 0.45, lw = r * 0.35;
    for (let i = 0; i < this.L; i++) {
      const s = p.links.src[i], d = p.links.dst[i];
      let ax = X[s], ay = Y[s], bx, by, cx = null, cy = null;
      let ux, uy;
      if (p.links.shape[i] === 1) {
        ux = p.links.a[i]; uy = p.links.b[i];
        bx = ax + ux * r * 2.6; by = ay + uy * r * 2.6;
      } else {
        bx = X[d]; by = Y[d];
        const len = Math.hypot(bx - ax, by - ay) || 1;
        ux = (bx - ax) / len; uy = (by - ay) / len;
      }
      const px = -uy * off, py = ux * off;  // the right-hand side of the direction of travel
      ax += px + ux * r; ay += py + uy * r;
      if (p.links.shape[i] !== 1) { bx += px - ux * r; by += py - uy * r; }
      else { bx += px; by += py; }
      let dpath = "M" + ax.toFixed(3) + " " + ay.toFixed(3);
      if (p.links.shape[i] === 0 && p.links.a[i] > 0) {
        const len = Math.hypot(bx - ax, by - ay);
        cx = (ax + bx) / 2 - uy * len * p.links.a[i];
        cy = (ay + by) / 2 + ux * len * p.links.a[i];
        dpath += "Q" + cx.toFixed(3) + " " + cy.toFixed(3) + " " + bx.toFixed(3) + " " + by.toFixed(3);
      } else {
        dpath += "L" + bx.toFixed(3) + " " + by.toFixed(3);
      }
      const e = sv("path", {class: "link", d: dpath, "data-link": i, "stroke-width": lw}, gl);
      const t = sv("title", {}, e);
      t.textContent = "link " + i + ": " + s + " -> " + d;
      e.addEventListener("click", () => this.showLink(i));
      this.linkEls.push(e);
      this.linkGeom.push([ax, ay, bx, by, cx, cy]);
    }
    const gn = sv("g", {class: "nodes"}, svg);
    this.nodeEls = [];
    for (let v = 0; v < X.length; v++) {
      let e;
      if (v < p.nodes.npus) {
        e = sv("circle", {class: "npu", cx: X[v], cy: Y[v], r: r, "data-node": v}, gn);
      } else {
        e = sv("rect", {class: "switch", x: X[v] - r * 1.2, y: Y[v] - r * 1.2, width: r * 2.4,
          height: r * 2.4, "data-node": v}, gn);
      }
      e.addEventListener("mouseenter", (ev) => this.showNode(v, ev));
      e.addEventListener("mouseleave", () => { this.tip.hidden = true; });
      this.nodeEls.push(e);
    }
    if (X.length <= 64) {
      const gt = sv("g", {class: "labels"}, svg);
      for (let v = 0; v < X.length; v++) {
        const t = sv("text", {x: X[v], y: Y[v] - r * 1.5, "font-size": r * 1.4}, gt);
        t.textContent = v < p.nodes.npus ? String(v) : "s" + v;
      }
    }
    this.dots = sv("g", {class: "dots"}, svg);
    this.nodeRanks = {};
    p.rank_npu.forEach((n, r) => { (this.nodeRanks[n] = this.nodeRanks[n] || []).push(r); });
  };

  Panel.prototype.indexRecords = function () {
    const rc = this.p.records, n = rc.link.length;
    let maxSpan = 0;
    for (let k = 0; k < n; k++) maxSpan = Math.max(maxSpan, rc.dur[k] + this.p.links.lat[rc.link[k]]);
    this.maxSpan = maxSpan;
  };

  Panel.prototype.linkRecords = function (i) {
    if (!this.byLink) {
      const rc = this.p.records, L = this.L, n = rc.link.length;
      const start = new Int32Array(L + 1);
      for (let k = 0; k < n; k++) start[rc.link[k] + 1]++;
      for (let l = 0; l < L; l++) start[l + 1] += start[l];
      const fill = start.slice(0, L), order = new Int32Array(n);
      for (let k = 0; k < n; k++) order[fill[rc.link[k]]++] = k;
      this.byLink = [start, order];
    }
    const [start, order] = this.byLink;
    return order.subarray(start[i], start[i + 1]);
  };

  Panel.prototype.msgText = function (t) {
    const T = this.p.tasks, R = this.p.ranks;
    const who = (r) => (r < R ? "rank " + r : "switch " + this.p.rank_npu[r]);
    const det = DATA.detail_names[T.detail[t]];
    const slot = T.buf[t] >= 0 ? BUF[T.buf[t]] + "[" + T.idx[t] + (T.cnt[t] > 1 ? ".." + (T.idx[t] + T.cnt[t] - 1) : "") + "]" : "";
    return {who: who(T.rank[t]), to: who(T.peer[t]), det: det, slot: slot};
  };

  Panel.prototype.showLink = function (i) {
    const p = this.p, info = this.info;
    this.selected = i;
    this.linkEls.forEach((e, k) => e.classList.toggle("selected", k === i));
    info.textContent = "";
    const busy = p.links.busy[i];
    el("h3", {text: "link " + i + ": node " + p.links.src[i] + " -> node " + p.links.dst[i]}, info);
    el("p", {class: "linkfacts", text: p.links.bw[i] + " GB/s, " + p.links.lat[i] + " ns; busy " + us(busy) +
      " (" + (100 * busy / Math.max(p.finish_ns, 1e-9)).toFixed(1) + "%), " + p.links.count[i].toLocaleString() +
      " message" + (p.links.count[i] === 1 ? "" : "s")}, info);
    const tbl = el("table", {class: "messages", "data-link": i}, info);
    if (p.exact) {
      const head = el("tr", {}, tbl);
      for (const h of ["from", "op", "to", "what", "slot", "bytes", "on link from", "to"]) el("th", {text: h}, head);
      const T = p.tasks, rc = p.records;
      for (const k of this.linkRecords(i)) {
        const t = rc.task[k], m = this.msgText(t);
        const flow = T.detail[t] >= 9 && T.detail[t] <= 11;
        const r = el("tr", {class: "msg", "data-rank": T.rank[t], "data-op": T.op[t],
          "data-peer": T.peer[t], "data-flow": flow ? T.tag[t] : -1}, tbl);
        for (const v of [m.who, T.op[t] >= 0 ? T.op[t] : "-", m.to, flow ? m.det + " " + T.tag[t] : m.det,
          m.slot, bytes(T.bytes[t]), us(rc.start[k]), us(rc.start[k] + rc.dur[k])]) el("td", {text: v}, r);
      }
    } else {
      const head = el("tr", {}, tbl);
      for (const h of ["time bin", "messages starting", "busy"]) el("th", {text: h}, head);
      const B = p.bins;
      for (let b = 0; b < B; b++) {
        const c = p.link_bin_counts[i * B + b], h = p.heat[i * B + b];
        if (!c && !h) continue;
        const r = el("tr", {class: "bin", "data-count": c}, tbl);
        el("td", {text: us(b * p.bin_ns) + " - " + us((b + 1) * p.bin_ns)}, r);
        el("td", {text: c.toLocaleString()}, r);
        el("td", {text: (h / 10).toFixed(1) + "%"}, r);
      }
    }
  };

  Panel.prototype.showNode = function (v, ev) {
    const p = this.p, tip = this.tip, ranks = this.nodeRanks[v] || [];
    tip.textContent = "";
    el("b", {text: (v < p.nodes.npus ? "NPU " : "switch ") + v + (ranks.length ? " (rank " + ranks.join(", ") + ")" : "")}, tip);
    if (!ranks.length) el("div", {text: "no operations"}, tip);
    if (p.exact) {
      const T = p.tasks, rows = [];
      for (let t = 0; t < T.rank.length; t++) if (ranks.includes(T.rank[t])) rows.push(t);
      const list = el("table", {class: "ops"}, tip);
      for (const t of rows.slice(0, 40)) {
        const m = this.msgText(t), r = el("tr", {class: "op"}, list);
        const peer = T.peer[t] >= 0 ? (T.detail[t] === 0 || T.detail[t] === 9 ? "to " : "from ") + m.to : "";
        for (const x of [T.op[t] >= 0 ? "op " + T.op[t] : "", m.det, peer, m.slot, us(T.issue[t]) + " - " + us(T.finish[t])]) el("td", {text: x}, r);
      }
      if (rows.length > 40) el("div", {text: "... and " + (rows.length - 40) + " more operations"}, tip);
    } else {
      const tot = p.rank_totals;
      for (const r of ranks) {
        el("div", {text: "rank " + r + ": " + tot.sends[r] + " sends (" + bytes(tot.sent_bytes[r]) + "), " + tot.recvs[r] +
          " receives, " + tot.comps[r] + " local ops; busy " + us(tot.first[r]) + " - " + us(tot.last[r])}, tip);
      }
    }
    const box = this.svg.parentNode.getBoundingClientRect();
    tip.style.left = Math.min(box.width - 260, ev.clientX - box.left + 12) + "px";
    tip.style.top = (ev.clientY - box.top + 12) + "px";
    tip.hidden = false;
  };

  Panel.prototype.sortedLinks = function () {
    if (!this.rowOrder) {
      const busy = this.p.links.busy;
      this.rowOrder = Array.from({length: this.L}, (_, i) => i).sort((a, b) => busy[b] - busy[a] || a - b);
    }
    return this.rowOrder;
  };

  function heatCanvas(canvas, rows, bins, value, width, height) {
    const off = document.createElement("canvas");
    off.width = bins; off.height = Math.max(1, rows);
    const ctx = off.getContext("2d"), img = ctx.createImageData(bins, Math.max(1, rows));
    for (let y = 0; y < rows; y++) {
      for (let b = 0; b < bins; b++) {
        const v = value(y, b), o = 4 * (y * bins + b);
        const c = v > 0 ? ramp(v) : [238, 238, 238];
        img.data[o] = c[0]; img.data[o + 1] = c[1]; img.data[o + 2] = c[2]; img.data[o + 3] = 255;
      }
    }
    ctx.putImageData(img, 0, 0);
    canvas.width = width; canvas.height = height;
    const g = canvas.getContext("2d");
    g.imageSmoothingEnabled = false;
    g.drawImage(off, 0, 0, width, height);
    return g.getImageData(0, 0, width, height);
  }

  Panel.prototype.drawHeat = function () {
    const p = this.p, order = this.sortedLinks(), B = p.bins;
    const width = Math.max(300, this.heat.parentNode.clientWidth - 20);
    const height = Math.min(400, Math.max(60, this.L * 3));
    this.heatImg = heatCanvas(this.heat, this.L, B, (y, b) => p.heat[order[y] * B + b] / 1000, width, height);
  };

  Panel.prototype.drawGantt = function () {
    const p = this.p, R = p.rank_npu.length, g = this.gantt;
    const width = Math.max(300, g.parentNode.clientWidth - 20);
    const rowH = Math.max(2, Math.min(14, Math.floor(600 / R)));
    const height = R * rowH;
    if (!p.exact) {
      const B = p.bins;
      let top = 1;
      for (const a of [p.rank_send_activity, p.rank_recv_activity]) for (const v of a) top = Math.max(top, v);
      this.ganttImg = heatCanvas(g, 2 * R, B, (y, b) => {
        const a = (y % 2 === 0 ? p.rank_send_activity : p.rank_recv_activity)[(y >> 1) * B + b];
        return a > 0 ? 0.1 + 0.9 * (a / top) : 0;
      }, width, height);
      return;
    }
    g.width = width; g.height = height;
    const ctx = g.getContext("2d"), T = p.tasks, sx = width / Math.max(p.finish_ns, 1e-9);
    ctx.fillStyle = "#fafafa"; ctx.fillRect(0, 0, width, height);
    ctx.globalAlpha = 0.6;
    for (let t = 0; t < T.rank.length; t++) {
      const d = T.detail[t], y = T.rank[t] * rowH;
      const x = T.from[t] * sx, w = Math.max(1, (T.finish[t] - T.from[t]) * sx);
      if (d === 0 || d === 9) {
        ctx.fillStyle = "#1f77b4"; ctx.fillRect(x, y, w, rowH / 2 - 0.5);
      } else if (d === 1 || d === 2 || d === 10) {
        ctx.fillStyle = "#ff7f0e"; ctx.fillRect(x, y + rowH / 2, w, rowH / 2 - 0.5);
      } else if (d === 11) {
        ctx.fillStyle = "#2ca02c"; ctx.fillRect(x, y, w, rowH - 0.5);
      } else {
        ctx.fillStyle = "#888"; ctx.fillRect(x, y + rowH / 3, w, rowH / 3);
      }
    }
    ctx.globalAlpha = 1;
    this.ganttImg = ctx.getImageData(0, 0, width, height);
  };

  function cursor(canvas, img, frac) {
    if (!img) return;
    const ctx = canvas.getContext("2d");
    ctx.putImageData(img, 0, 0);
    const x = Math.round(frac * canvas.width);
    ctx.fillStyle = "#d62728";
    ctx.fillRect(Math.min(canvas.width - 2, x), 0, 2, canvas.height);
  }

  Panel.prototype.listCritical = function () {
    const p = this.p, steps = p.critical.steps, names = DATA.detail_names;
    for (const s of steps.slice(0, 200)) {
      const [r, d, peer, op, a, b] = s;
      const who = r < p.ranks ? "rank " + r : "switch " + p.rank_npu[r];
      const what = names[d] + (peer >= 0 ? (d === 0 || d === 9 ? " to " : " from ") + (peer < p.ranks ? "rank " + peer : "switch " + p.rank_npu[peer]) : "");
      el("li", {text: who + (op >= 0 ? " op " + op : "") + ": " + what + ", " + us(a) + " - " + us(b)}, this.critList);
    }
    if (steps.length > 200) el("li", {text: "... " + (steps.length - 200) + " more"}, this.critList);
  };

  Panel.prototype.setCritical = function (on) {
    const crit = new Set(on ? this.p.critical.links : []);
    const nodes = new Set(on ? this.p.critical.nodes : []);
    this.linkEls.forEach((e, i) => e.classList.toggle("crit", crit.has(i)));
    this.nodeEls.forEach((e, v) => e.classList.toggle("crit", nodes.has(v)));
  };

  Panel.prototype.draw = function (t, whole) {
    const p = this.p, B = p.bins, fin = Math.max(p.finish_ns, 1e-9);
    const b = Math.min(B - 1, Math.floor((t / fin) * B));
    for (let i = 0; i < this.L; i++) {
      const load = whole ? p.links.busy[i] / fin : (t <= fin ? p.heat[i * B + b] / 1000 : 0);
      const e = this.linkEls[i];
      if (load > 0) { e.style.stroke = rgb(ramp(load)); e.classList.add("busy"); }
      else { e.style.stroke = ""; e.classList.remove("busy"); }
    }
    cursor(this.heat, this.heatImg, Math.min(1, t / fin));
    cursor(this.gantt, this.ganttImg, Math.min(1, t / fin));
    this.dots.textContent = "";
    if (!p.exact || whole) return;
    const rc = p.records, n = rc.start.length;
    let lo = 0, hi = n;
    while (lo < hi) { const m = (lo + hi) >> 1; if (rc.start[m] <= t) lo = m + 1; else hi = m; }
    let shown = 0;
    for (let k = lo - 1; k >= 0 && shown < 1500; k--) {
      if (rc.start[k] < t - this.maxSpan) break;
      const l = rc.link[k], len = rc.dur[k] + p.links.lat[l];
      if (t >= rc.start[k] + len) continue;
      const f = len > 0 ? (t - rc.start[k]) / len : 1, g = this.linkGeom[l];
      let x, y;
      if (g[4] !== null) {
        const u = 1 - f;
        x = u * u * g[0] + 2 * u * f * g[4] + f * f * g[2];
        y = u * u * g[1] + 2 * u * f * g[5] + f * f * g[3];
      } else { x = g[0] + (g[2] - g[0]) * f; y = g[1] + (g[3] - g[1]) * f; }
      sv("circle", {class: "chunk", cx: x.toFixed(3), cy: y.toFixed(3), r: this.r * 0.55,
        fill: hue(p.tasks.rank[rc.task[k]])}, this.dots);
      shown++;
    }
  };

  // ---------------------------------------------------------------- the schedule page
  function schedulePage() {
    const root = $("panels");
    if (DATA.panels.length > 1) {
      const [a, b] = DATA.panels;
      const differ = [];
      if (a.collective !== b.collective) differ.push("collectives (" + a.collective + ", " + b.collective + ")");
      if (a.size_bytes !== b.size_bytes) differ.push("sizes (" + bytes(a.size_bytes) + ", " + bytes(b.size_bytes) + ")");
      if (a.completion !== b.completion) differ.push("send-completion rules");
      if (differ.length) el("p", {class: "aggregated differ", text: "The two programs differ in " + differ.join(" and ") + ": their times do not compare like for like."}, root);
      root.classList.add("compare");
    }
    const panels = DATA.panels.map((p, i) => new Panel(p, i, root));
    const end = Math.max(...DATA.panels.map((p) => p.finish_ns), 1e-9);
    const slider = $("slider"), clock = $("clock"), play = $("play"), speed = $("speed");
    const whole = $("whole"), crit = $("critical");
    slider.max = 1000;
    let t = 0, playing = false, last = 0;
    function show() {
      clock.textContent = "t = " + us(t) + " of " + us(end);
      clock.dataset.t = t;
      for (const p of panels) p.draw(t, whole.checked);
    }
    slider.addEventListener("input", () => { t = (slider.value / 1000) * end; show(); });
    whole.addEventListener("change", show);
    crit.addEventListener("change", () => panels.forEach((p) => p.setCritical(crit.checked)));
    function frame(now) {
      if (!playing) return;
      const dt = last ? now - last : 0;
      last = now;
      t = Math.min(end, t + (dt / 10000) * end * Number(speed.value));
      slider.value = Math.round((t / end) * 1000);
      show();
      if (t >= end) { playing = false; play.textContent = "play"; return; }
      requestAnimationFrame(frame);
    }
    play.addEventListener("click", () => {
      playing = !playing;
      play.textContent = playing ? "pause" : "play";
      if (playing) { if (t >= end) t = 0; last = 0; requestAnimationFrame(frame); }
    });
    show();
    window.collcView = {panels: panels, time: () => t};
  }

  // ---------------------------------------------------------------- the bench page
  function benchPage() {
    const b = DATA.bench, root = $("panels");
    el("h2", {text: b.collective + " over " + b.ranks + " ranks on " + b.topology}, root);
    const algos = Object.keys(b.series);
    const chart = (title, ylabel, value, boundValue, logy) => {
      el("h3", {text: title}, root);
      const W = 760, H = 380, ml = 70, mr = 170, mt = 10, mb = 45;
      const s = sv("svg", {class: "chart", viewBox: "0 0 " + W + " " + H, width: W, height: H}, root);
      const pts = [];
      for (const a of algos) for (const r of b.series[a]) if (value(r) > 0) pts.push([r[0], value(r)]);
      for (const z of b.sizes) { const v = boundValue(z); if (v > 0) pts.push([z, v]); }
      if (!pts.length) return;
      const xs = pts.map((q) => Math.log2(q[0])), ys = pts.map((q) => (logy ? Math.log10(q[1]) : q[1]));
      let xa = Math.min(...xs), xb = Math.max(...xs), ya = logy ? Math.min(...ys) : 0, yb = Math.max(...ys);
      if (xa === xb) { xa -= 1; xb += 1; }
      if (ya === yb) { ya -= 1; yb += 1; }
      const X = (z) => ml + ((Math.log2(z) - xa) / (xb - xa)) * (W - ml - mr);
      const Y = (v) => H - mb - (((logy ? Math.log10(v) : v) - ya) / (yb - ya)) * (H - mt - mb);
      sv("line", {x1: ml, y1: H - mb, x2: W - mr, y2: H - mb, class: "axis"}, s);
      sv("line", {x1: ml, y1: mt, x2: ml, y2: H - mb, class: "axis"}, s);
      for (const z of b.sizes) {
        const tx = sv("text", {x: X(z), y: H - mb + 16, "text-anchor": "middle", class: "tick"}, s);
        tx.textContent = bytes(z);
      }
      for (let k = 0; k <= 4; k++) {
        const v = ya + ((yb - ya) * k) / 4, val = logy ? Math.pow(10, v) : v;
        const tx = sv("text", {x: ml - 6, y: Y(val) + 4, "text-anchor": "end", class: "tick"}, s);
        tx.textContent = val.toPrecision(3);
      }
      const yl = sv("text", {x: 14, y: H / 2, transform: "rotate(-90 14 " + H / 2 + ")", "text-anchor": "middle", class: "tick"}, s);
      yl.textContent = ylabel;
      const line = (rows, cls, color, name) => {
        const q = rows.filter((r) => r[1] > 0);
        if (!q.length) return;
        sv("path", {class: cls, stroke: color, d: q.map((r, k) => (k ? "L" : "M") + X(r[0]).toFixed(1) + " " + Y(r[1]).toFixed(1)).join(" "), "data-series": name}, s);
        for (const r of q) {
          const c = sv("circle", {cx: X(r[0]), cy: Y(r[1]), r: 3.5, fill: color, class: "point", "data-series": name}, s);
          sv("title", {}, c).textContent = name + " at " + bytes(r[0]) + ": " + r[1].toPrecision(4) + " " + ylabel;
        }
      };
      algos.forEach((a, k) => line(b.series[a].map((r) => [r[0], value(r)]), "series", series(k), a));
      line(b.sizes.map((z) => [z, boundValue(z)]), "bound", "#000", "lower bound");
      [...algos, "lower bound"].forEach((a, k) => {
        const y = mt + 14 + k * 18;
        sv("line", {x1: W - mr + 10, y1: y - 4, x2: W - mr + 34, y2: y - 4, stroke: k < algos.length ? series(k) : "#000",
          class: k < algos.length ? "series" : "bound"}, s);
        sv("text", {x: W - mr + 40, y: y, class: "tick"}, s).textContent = a;
      });
    };
    const factor = b.busbw_factor;
    chart("Time per size (log-log)", "time us", (r) => r[1] / 1000, (z) => b.bounds[z] / 1000, true);
    chart("Bus bandwidth per size", "busbw GB/s", (r) => r[2] || 0, (z) => (z / b.bounds[z]) * factor, false);
    window.collcView = {bench: true};
  }

  function start() {
    const t0 = performance.now();
    if (DATA.bench) benchPage(); else schedulePage();
    requestAnimationFrame(() => { window.collcPainted = performance.now(); window.collcBuilt = performance.now() - t0; });
  }
  start();
})();
