// chime console: progressive enhancement only. Every page works without
// this file; it localizes times, refreshes the job list, follows a running
// job's log and previews a schedule's fire times. Text from the server is
// only ever set with textContent.
(function () {
  "use strict";
  function pad(n) { return (n < 10 ? "0" : "") + n; }
  function local(d) {
    return d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()) + " " +
      pad(d.getHours()) + ":" + pad(d.getMinutes()) + ":" + pad(d.getSeconds());
  }
  function utc(d) { return d.toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC"); }
  function localize(root) {
    root.querySelectorAll("time[datetime]").forEach(function (el) {
      var d = new Date(el.getAttribute("datetime"));
      if (isNaN(d)) { return; }
      el.textContent = local(d);
      el.title = utc(d);
    });
  }
  function timeEl(iso) {
    var el = document.createElement("time");
    el.setAttribute("datetime", iso);
    el.textContent = iso;
    return el;
  }

  // The job list reloads its rows in place while it is the first page.
  function refreshJobs() {
    var table = document.querySelector("table[data-refresh]");
    if (!table) { return; }
    var every = parseInt(table.getAttribute("data-refresh"), 10) * 1000;
    setInterval(function () {
      if (document.visibilityState !== "visible") { return; }
      fetch(location.href, { credentials: "same-origin", headers: { "Accept": "text/html" } })
        .then(function (r) { return r.ok && !r.redirected ? r.text() : null; })
        .then(function (html) {
          if (!html) { return; }
          var doc = new DOMParser().parseFromString(html, "text/html");
          var fresh = doc.getElementById("job-rows"), cur = document.getElementById("job-rows");
          if (fresh && cur) { localize(fresh); cur.replaceWith(document.adoptNode(fresh)); }
        }).catch(function () {});
    }, every);
  }

  // A running job's log grows at the bottom until the job finishes.
  function followLog() {
    var log = document.getElementById("job-log");
    if (!log || !log.hasAttribute("data-follow")) { return; }
    var id = log.getAttribute("data-job");
    var after = log.getAttribute("data-after") || "0";
    var status = document.getElementById("job-status");
    function tick() {
      fetch("/jobs/" + id + "/log?after=" + encodeURIComponent(after), { credentials: "same-origin" })
        .then(function (r) { return r.ok && !r.redirected ? r.json() : null; })
        .then(function (data) {
          if (!data) { return setTimeout(tick, 3000); }
          data.lines.forEach(function (l) {
            var li = document.createElement("li");
            li.className = "l-" + l.level.replace(/[^a-z]/g, "");
            var lvl = document.createElement("span"); lvl.className = "lvl"; lvl.textContent = l.level;
            var msg = document.createElement("span"); msg.className = "msg"; msg.textContent = l.message;
            li.append(timeEl(l.at), " ", lvl, " ", msg);
            localize(li);
            log.appendChild(li);
            after = String(l.id);
          });
          if (status) { status.textContent = data.words; }
          if (data.finished) {
            // The page shows the result, the error and the buttons the
            // final state allows.
            location.replace("/jobs/" + id);
            return;
          }
          setTimeout(tick, 1000);
        }).catch(function () { setTimeout(tick, 3000); });
    }
    setTimeout(tick, 1000);
  }

  // The schedule form shows the inputs of the chosen type and previews
  // the next fire times through the API's dry run.
  function scheduleForm() {
    var form = document.getElementById("schedule-form");
    if (!form) { return; }
    var type = form.querySelector("[name=schedule_type]");
    var spec = { cron: "cron_expr", interval: "interval_seconds", once: "run_at" };
    function showSpec() {
      Object.keys(spec).forEach(function (k) {
        var f = form.querySelector("[data-field=" + spec[k] + "]");
        if (f) { f.hidden = type.value !== k; }
      });
    }
    var list = document.getElementById("preview-fires"), err = document.getElementById("preview-error");
    var timer = null, seq = 0;
    // A form nobody has touched yet is not wrong: its first preview shows
    // fire times or a hint, never an error.
    var touched = false;
    function note(text) {
      var li = document.createElement("li"); li.className = "muted"; li.textContent = text; list.appendChild(li);
    }
    function preview() {
      var mine = ++seq;
      fetch("/schedules/preview", { method: "POST", credentials: "same-origin", body: new URLSearchParams(new FormData(form)) })
        .then(function (r) { return r.ok && !r.redirected ? r.json() : null; })
        .then(function (data) {
          if (!data || mine !== seq) { return; }
          list.replaceChildren();
          var msg = touched ? (data.error || "") : "";
          err.hidden = !msg;
          err.textContent = msg;
          if (data.hint) { note(data.hint); }
          data.fires.forEach(function (t) {
            var li = document.createElement("li"); li.appendChild(timeEl(t)); list.appendChild(li);
          });
          if (!list.firstChild && !msg) { note("Fill in the form to see when it fires."); }
          localize(list);
        }).catch(function () {});
    }
    function later() { touched = true; clearTimeout(timer); timer = setTimeout(preview, 300); }
    type.addEventListener("change", showSpec);
    form.addEventListener("input", later);
    form.addEventListener("change", later);
    showSpec();
    preview();
  }

  function start() {
    localize(document);
    refreshJobs();
    followLog();
    scheduleForm();
  }
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", start); } else { start(); }
})();
