// Shortlink dashboard: progressive enhancement only. Every page works
// without this file; it adds copy buttons, confirmations, the QR code's
// live preview and drag-to-reorder.
(function () {
  'use strict';
  document.documentElement.classList.add('js');

  // The phone's menu: folded behind its button.
  var toggle = document.querySelector('.menu-toggle');
  if (toggle) toggle.addEventListener('click', function () {
    var open = toggle.closest('.sidebar').classList.toggle('menu-open');
    toggle.setAttribute('aria-expanded', open ? 'true' : 'false');
  });

  // Copy to clipboard.
  document.addEventListener('click', function (e) {
    var b = e.target.closest('[data-copy]');
    if (!b || !navigator.clipboard) return;
    navigator.clipboard.writeText(b.getAttribute('data-copy')).then(function () {
      b.classList.add('copied');
      setTimeout(function () { b.classList.remove('copied'); }, 1400);
    });
  });

  // Confirm destructive forms.
  document.addEventListener('submit', function (e) {
    var f = e.target;
    if (f.dataset && f.dataset.confirm && !window.confirm(f.dataset.confirm)) e.preventDefault();
  });

  // "All events" checks every event of its form.
  document.addEventListener('change', function (e) {
    var a = e.target.closest('.ev-all');
    if (!a) return;
    a.closest('fieldset').querySelectorAll('input[name=events]').forEach(function (c) { c.checked = a.checked; });
  });

  // "Every permission" checks every box.
  var all = document.getElementById('perm-all');
  if (all) all.addEventListener('change', function () {
    document.querySelectorAll('input[name=permissions]').forEach(function (c) { c.checked = all.checked; });
  });

  // QR designer: live preview.
  var form = document.getElementById('qr-form');
  if (form) {
    var img = document.getElementById('qr-preview'), err = document.getElementById('qr-error');
    var empty = document.getElementById('qr-empty'), timer = null, seq = 0, lastURL = null;
    var refresh = function () {
      form.querySelectorAll('output').forEach(function (o) {
        var input = document.getElementById(o.htmlFor.value || o.getAttribute('for'));
        if (input) o.textContent = input.type === 'range' ? input.value + '%' : input.value;
      });
      if (!form.url.value) return;
      var mine = ++seq, body = new URLSearchParams(new FormData(form));
      fetch(form.dataset.preview, {method: 'POST', body: body, headers: {'X-CSRF-Token': form.csrf.value}, credentials: 'same-origin'})
        .then(function (r) { return r.ok ? r.blob().then(function (b) { return {ok: true, b: b}; }) : r.text().then(function (t) { return {ok: false, t: t}; }); })
        .then(function (res) {
          if (mine !== seq) return;
          if (!res.ok) { err.textContent = res.t; err.hidden = false; return; }
          err.hidden = true;
          if (lastURL) URL.revokeObjectURL(lastURL);
          lastURL = URL.createObjectURL(res.b);
          img.src = lastURL; img.alt = 'QR code of ' + form.url.value; img.hidden = false;
          img.dataset.version = String(mine);
          if (empty) empty.hidden = true;
        });
    };
    form.addEventListener('input', function () { clearTimeout(timer); timer = setTimeout(refresh, 150); });
    form.addEventListener('change', function () { clearTimeout(timer); timer = setTimeout(refresh, 50); });
  }

  // Gallery items: drag to reorder (the Up/Down buttons do it without a mouse).
  var list = document.getElementById('items');
  if (list && list.querySelector('[draggable=true]')) {
    var dragged = null;
    list.addEventListener('dragstart', function (e) {
      dragged = e.target.closest('.item');
      if (!dragged) return;
      dragged.classList.add('dragging');
      e.dataTransfer.effectAllowed = 'move';
      e.dataTransfer.setData('text/plain', dragged.dataset.id);
    });
    var clear = function () { list.querySelectorAll('.drop-before,.drop-after').forEach(function (x) { x.classList.remove('drop-before', 'drop-after'); }); };
    list.addEventListener('dragover', function (e) {
      var over = e.target.closest('.item');
      if (!dragged || !over || over === dragged) return;
      e.preventDefault();
      clear();
      var r = over.getBoundingClientRect();
      over.classList.add(e.clientY < r.top + r.height / 2 ? 'drop-before' : 'drop-after');
    });
    list.addEventListener('drop', function (e) {
      var over = e.target.closest('.item');
      if (!dragged || !over || over === dragged) return;
      e.preventDefault();
      var before = over.classList.contains('drop-before');
      clear();
      list.insertBefore(dragged, before ? over : over.nextSibling);
      var f = document.getElementById('reorder-form');
      f.itemIds.value = Array.prototype.map.call(list.querySelectorAll('.item'), function (li) { return li.dataset.id; }).join(',');
      f.submit();
    });
    list.addEventListener('dragend', function () { if (dragged) dragged.classList.remove('dragging'); dragged = null; clear(); });
  }
})();

/* == feedback: the error summary, field errors, the gallery item form per type == */
(function () {
  'use strict';
  // A page with errors: the summary takes the focus, so that a screen
  // reader reads it; its links open the section holding the field and put
  // the focus in the field.
  var problem = document.getElementById('problem');
  if (problem) {
    problem.focus();
    problem.addEventListener('click', function (e) {
      var a = e.target.closest('a[href^="#"]');
      var field = a && document.getElementById(a.getAttribute('href').slice(1));
      if (!field) return;
      e.preventDefault();
      var d = field.closest('details');
      if (d) d.open = true;
      field.focus();
      field.scrollIntoView({block: 'center'});
    });
  }

  // The gallery's "Add an item": only the chosen type's fields show.
  var form = document.querySelector('[data-item-form]');
  var type = form && form.querySelector('[data-item-type]');
  if (type) {
    var show = function () {
      form.querySelectorAll('[data-item-types]').forEach(function (el) {
        var on = el.getAttribute('data-item-types').split(' ').indexOf(type.value) >= 0;
        el.hidden = !on;
        el.querySelectorAll('input, select, textarea').forEach(function (i) { i.disabled = !on; });
      });
      var all = form.querySelector('.item-fields-help');
      if (all) all.hidden = true;
    };
    type.addEventListener('change', show);
    show();
  }
})();
