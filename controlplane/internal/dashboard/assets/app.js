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

/* == linkslist: bulk selection, instant filters, keyboard shortcuts == */
(function () {
  'use strict';
  var bulk = document.getElementById('bulk');

  // Bulk bar: shown while links are ticked, with their number; "select
  // all" ticks every link of the page (and says so when some are).
  var picks = function () { return document.querySelectorAll('input.link-pick'); };
  var syncBulk = function () {
    if (!bulk) return;
    var all = document.querySelector('input.bulk-all'), n = 0, boxes = picks();
    boxes.forEach(function (c) {
      if (c.checked) n++;
      var row = c.closest('.link-row');
      if (row) row.classList.toggle('picked', c.checked);
    });
    bulk.querySelector('.bulk-n').textContent = String(n);
    bulk.classList.toggle('bulk-on', n > 0);
    if (all) {
      all.checked = n > 0 && n === boxes.length;
      all.indeterminate = n > 0 && n < boxes.length;
    }
  };
  if (bulk) {
    document.documentElement.classList.add('js-bulk');
    bulk.hidden = false;
    document.addEventListener('change', function (e) {
      if (e.target.matches('input.bulk-all')) picks().forEach(function (c) { c.checked = e.target.checked; });
      if (e.target.matches('input.bulk-all, input.link-pick')) syncBulk();
    });
    syncBulk();
  }

  // Filters apply at once: a changed select at once, typed text after a
  // pause. The list is fetched and swapped in place (focus and what is
  // being typed stay), and the address follows, so that it can be shared.
  var filters = document.querySelector('form[data-instant]');
  if (filters && window.fetch && window.DOMParser && window.history) {
    document.documentElement.classList.add('js-instant');
    var timer = null, seq = 0;
    var apply = function () {
      clearTimeout(timer);
      var q = new URLSearchParams(new FormData(filters));
      Array.from(q.keys()).forEach(function (k) { if (!q.get(k)) q.delete(k); });
      var s = q.toString(), url = filters.getAttribute('action') + (s ? '?' + s : '');
      var mine = ++seq;
      filters.setAttribute('aria-busy', 'true');
      fetch(url, {credentials: 'same-origin', headers: {'Accept': 'text/html'}})
        .then(function (r) { return r.text(); })
        .then(function (html) {
          if (mine !== seq) return;
          var doc = new DOMParser().parseFromString(html, 'text/html');
          ['links-results', 'links-summary'].forEach(function (id) {
            var now = document.getElementById(id), next = doc.getElementById(id);
            if (now && next) now.replaceWith(document.importNode(next, true));
          });
          var back = doc.querySelector('#bulk input[name=back]'), mineBack = bulk && bulk.querySelector('input[name=back]');
          if (back && mineBack) mineBack.value = back.value;
          // The bulk bar's actions follow "Show" (Archive, Restore).
          var nextBulk = doc.getElementById('bulk');
          if (bulk && nextBulk) {
            bulk.querySelectorAll('button[name=action][value=archive], button[name=action][value=restore]').forEach(function (b) { b.remove(); });
            var hint = bulk.querySelector('.bulk-hint');
            Array.from(nextBulk.querySelectorAll('button[name=action][value=archive], button[name=action][value=restore]')).reverse().forEach(function (b) {
              hint.after(document.importNode(b, true));
            });
          }
          history.replaceState(null, '', url);
          filters.removeAttribute('aria-busy');
          syncBulk();
        })
        .catch(function () { filters.submit(); });
    };
    filters.addEventListener('change', function (e) {
      if (e.target.matches('select')) apply();
    });
    filters.addEventListener('input', function (e) {
      if (!e.target.matches('input')) return;
      clearTimeout(timer);
      timer = setTimeout(apply, 300);
    });
    filters.addEventListener('submit', function (e) { e.preventDefault(); apply(); });
  }

  // Keyboard shortcuts: c a new link, / the search, ? the list of them.
  var dialog = document.getElementById('shortcuts');
  // Typing: in a text field, a text area or a select (its type-ahead); a
  // ticked checkbox or a pressed button is not.
  var typing = function (el) {
    if (!el) return false;
    if (el.tagName === 'INPUT') return !/^(checkbox|radio|button|submit|reset|range|color|file)$/.test(el.type);
    return el.isContentEditable || /^(TEXTAREA|SELECT)$/.test(el.tagName);
  };
  // The "/" that focused the search is not typed into it: the key's
  // keypress, where one comes apart from its keydown, is stopped too.
  var slashed = false;
  document.addEventListener('keypress', function (e) {
    if (slashed && e.key === '/') e.preventDefault();
    slashed = false;
  });
  document.addEventListener('keyup', function () { slashed = false; });
  document.addEventListener('keydown', function (e) {
    if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey || typing(e.target)) return;
    if (dialog && dialog.open) return;
    if (e.key === 'c' && document.body.dataset.newLink) {
      e.preventDefault();
      location.href = document.body.dataset.newLink;
    } else if (e.key === '/') {
      var search = document.querySelector('[data-shortcut="/"]');
      if (search) {
        e.preventDefault();
        slashed = true;
        search.focus();
        search.select();
      } else if (document.querySelector('.nav a[href="/links"]')) {
        e.preventDefault();
        location.href = '/links#search';
      }
    } else if (e.key === '?' && dialog && dialog.showModal) {
      e.preventDefault();
      dialog.showModal();
    }
  });
  if (dialog) dialog.addEventListener('click', function (e) {
    if (e.target === dialog || e.target.closest('[data-close-dialog]')) dialog.close();
  });
  if (location.hash === '#search') {
    var s = document.querySelector('[data-shortcut="/"]');
    if (s) s.focus();
  }
})();

/* == qrlogo: the QR designer's logo (none, the link icon or an uploaded image) == */
(function () {
  'use strict';
  var form = document.getElementById('qr-form'), box = document.getElementById('qr-logo');
  if (!form || !box) return;
  var upload = box.querySelector('.qr-logo-upload'), data = document.getElementById('qr-logo-data');
  var file = document.getElementById('qr-logo-file'), ec = document.getElementById('qr-ec');
  var help = document.getElementById('qr-ec-help'), err = document.getElementById('qr-error');
  var mode = function () { var c = box.querySelector('input[name=logoMode]:checked'); return c ? c.value : 'none'; };
  // A logo is drawn at error correction High: the form shows it.
  var sync = function () {
    var m = mode();
    if (m === 'upload') upload.removeAttribute('data-idle'); else upload.setAttribute('data-idle', '');
    if (m !== 'none') ec.value = 'H';
    help.hidden = m === 'none';
  };
  box.addEventListener('change', function (e) { if (e.target.name === 'logoMode') sync(); });
  // The chosen image travels as a data URL in the hidden field logo, so that
  // the live preview and a failed save keep it.
  file.addEventListener('change', function (e) {
    // The preview follows once the image is read, not on the bare change.
    e.stopPropagation();
    var f = file.files && file.files[0];
    if (!f) return;
    if (f.size > 256 * 1024 || !/^image\/(png|jpeg)$/.test(f.type)) {
      err.textContent = 'logo: choose a PNG or JPEG image of at most 256 KiB.';
      err.hidden = false;
      file.value = '';
      return;
    }
    var reader = new FileReader();
    reader.onload = function () {
      data.value = String(reader.result);
      box.querySelector('input[name=logoMode][value=upload]').checked = true;
      sync();
      form.dispatchEvent(new Event('input', {bubbles: true}));
    };
    reader.readAsDataURL(f);
  });
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

/* oidc: after single sign-on, the callback's page moves on to the dashboard.
   The session cookie is SameSite=Strict: a redirect within the navigation
   that came from the identity provider's site would not carry it, this
   navigation (started by the dashboard's own page) does. */
(function () {
  var next = document.querySelector('a[data-oidc-continue]');
  if (next) location.replace(next.href);
})();

/* imports: the import page's progress bars follow their jobs; for CSV, the
   file's header row is read in the browser and each link field gets a select
   of its columns (guessed from the names the server knows), written to the
   mapping field as JSON; without script that field is typed by hand */
(function () {
  'use strict';
  var form = document.querySelector('[data-import-form]');
  var source = form && form.querySelector('[data-import-source]');
  var mapping = form && form.querySelector('[data-import-mapping]');
  var mapper = mapping && mapping.querySelector('[data-import-mapper]');
  var text = mapping && mapping.querySelector('[data-import-mapping-text]');
  var area = text && text.querySelector('textarea');
  var file = form && form.querySelector('input[type=file]');
  var selects = mapper ? mapper.querySelectorAll('[data-map-field]') : [];

  /* csvRecord reads the record that starts at i (RFC 4180 quotes); it
     returns its cells and where the next one starts. */
  var csvRecord = function (s, i) {
    var cells = [], cell = '', quoted = false;
    for (; i < s.length; i++) {
      var c = s.charAt(i);
      if (quoted) {
        if (c !== '"') cell += c;
        else if (s.charAt(i + 1) === '"') { cell += '"'; i++; }
        else quoted = false;
      } else if (c === '"') quoted = true;
      else if (c === ',') { cells.push(cell); cell = ''; }
      else if (c === '\n' || c === '\r') {
        if (c === '\r' && s.charAt(i + 1) === '\n') i++;
        i++;
        break;
      } else cell += c;
    }
    cells.push(cell);
    return [cells, i];
  };
  /* csvHeader is the file's header row, as the server reads it: a byte
     order mark and Excel's "sep=," line skipped, cells trimmed. */
  var csvHeader = function (s) {
    if (s.charAt(0) === '\ufeff') s = s.slice(1);
    var r = csvRecord(s, 0);
    if (r[0].length <= 2 && /^sep=/i.test(r[0][0])) r = csvRecord(s, r[1]);
    return r[0].map(function (h) { return h.trim(); }).filter(function (h) { return h !== ''; });
  };
  var norm = function (h) { return h.toLowerCase().replace(/[^a-z0-9]/g, ''); };
  var write = function () {
    var m = {}, any = false;
    selects.forEach(function (sel) {
      if (sel.value) { m[sel.getAttribute('data-map-field')] = sel.value; any = true; }
    });
    area.value = any ? JSON.stringify(m) : '';
  };
  var build = function (header) {
    var guesses = {}, before = {};
    try { guesses = JSON.parse(mapper.getAttribute('data-guesses') || '{}'); } catch (e) { guesses = {}; }
    try { before = area.value ? JSON.parse(area.value) : {}; } catch (e) { before = {}; }
    selects.forEach(function (sel) {
      var field = sel.getAttribute('data-map-field');
      while (sel.options.length > 1) sel.remove(1);
      var chosen = '';
      header.forEach(function (h) {
        sel.add(new Option(h, h));
        if (!chosen && guesses[norm(h)] === field) chosen = h;
      });
      if (before[field] && header.indexOf(before[field]) >= 0) chosen = before[field];
      sel.value = chosen;
    });
    var more = mapper.querySelector('[data-import-mapper-more]');
    if (more && [].some.call(more.querySelectorAll('[data-map-field]'), function (sel) { return !!sel.value; })) more.open = true;
    mapper.querySelector('[data-import-mapper-note]').textContent = header.length + ' columns read from the file\'s first line. ' +
      'Each field takes the column chosen beside it; a column chosen for none is not imported.';
    mapper.hidden = false;
    text.hidden = true;
    write();
  };
  var read = function () {
    var f = file && file.files && file.files[0];
    if (!mapper || !f || source.value !== 'csv' || !window.FileReader) {
      if (mapper) mapper.hidden = true;
      if (text) text.hidden = false;
      return;
    }
    var r = new FileReader();
    r.onload = function () { build(csvHeader(String(r.result))); };
    // The header is the first line: its first 64 KiB are enough.
    r.readAsText(f.slice(0, 65536));
  };
  if (source && mapping) {
    var sync = function () {
      var on = source.value === 'csv';
      mapping.hidden = !on;
      area.disabled = !on;
      read();
    };
    source.addEventListener('change', sync);
    if (file) file.addEventListener('change', read);
    selects.forEach(function (sel) { sel.addEventListener('change', write); });
    sync();
  }

  var live = document.querySelectorAll('[data-import-live]');
  if (!live.length || !window.fetch) return;
  var final = {done: true, failed: true, canceled: true};
  var pending = live.length;
  live.forEach(function (row) {
    var url = row.getAttribute('data-import-live');
    var bar = row.querySelector('[data-import-bar]');
    var counts = row.querySelector('[data-import-counts]');
    var status = row.querySelector('[data-import-status]');
    var tick = function () {
      fetch(url, {credentials: 'same-origin', headers: {Accept: 'application/json'}})
        .then(function (res) { return res.ok ? res.json() : null; })
        .then(function (env) {
          var j = env && env.data;
          if (!j) return;
          bar.max = Math.max(j.total, 1);
          bar.value = j.read;
          bar.textContent = (j.total ? Math.floor(j.read * 100 / j.total) : 100) + '%';
          counts.textContent = j.read + ' of ' + j.total + ' rows · ' + j.created + ' created · ' +
            j.skipped + ' skipped · ' + j.failed + ' failed';
          status.textContent = j.status;
          status.className = 'badge import-status import-' + j.status;
          if (final[j.status]) {
            row.removeAttribute('data-import-live');
            // Once every job shown has ended, the page shows their reports.
            if (--pending === 0) window.setTimeout(function () { window.location.reload(); }, 600);
            return;
          }
          window.setTimeout(tick, 1000);
        })
        .catch(function () { window.setTimeout(tick, 3000); });
    };
    window.setTimeout(tick, 500);
  });
})();
