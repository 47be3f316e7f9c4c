/*
 * idem.js: one-time tokens for pages (docs/spring.md, "Forms and tokens"). Served by the starter at
 * /idem/idem.js. A <form data-idem> gets a hidden _idem_token field, filled with a token from
 * POST /_idem/tokens when the page shows it and after each answer, so one click is one submission
 * and a double click is answered the first result. For fetch():
 *
 *   const submit = idem.once();                 // one token for one operation and its retries
 *   const res = await submit('/orders', {method: 'POST', body: ...});
 *
 * Spring Security's CSRF token is sent when the page has <meta name="_csrf"> and <meta
 * name="_csrf_header">.
 */
(function () {
  'use strict';
  var script = document.currentScript;
  var path = (script && script.dataset.tokens) || '/_idem/tokens';
  var field = (script && script.dataset.field) || '_idem_token';
  var header = (script && script.dataset.header) || 'Idempotency-Token';

  function csrf(headers) {
    var token = document.querySelector('meta[name="_csrf"]');
    var name = document.querySelector('meta[name="_csrf_header"]');
    if (token && name) headers[name.content] = token.content;
    return headers;
  }

  function token() {
    return fetch(path, {method: 'POST', credentials: 'same-origin', headers: csrf({})}).then(function (r) {
      if (!r.ok) throw new Error('idem: ' + path + ' answered ' + r.status);
      return r.json();
    }).then(function (j) { return j.token; });
  }

  // A fetch for one operation: every call (a retry after a timeout, a second click) sends the same
  // token, so the server runs it once; a new operation takes a new once().
  function once() {
    var pending = token();
    return function (url, init) {
      init = init || {};
      return pending.then(function (t) {
        var headers = csrf(Object.assign({}, init.headers || {}));
        headers[header] = t;
        return fetch(url, Object.assign({}, init, {headers: headers, credentials: init.credentials || 'same-origin'}));
      });
    };
  }

  function arm(form) {
    var input = form.querySelector('input[name="' + field + '"]');
    if (!input) {
      input = document.createElement('input');
      input.type = 'hidden';
      input.name = field;
      form.appendChild(input);
    }
    if (!input.value) token().then(function (t) { input.value = t; });
  }

  function init() {
    var forms = document.querySelectorAll('form[data-idem]');
    for (var i = 0; i < forms.length; i++) arm(forms[i]);
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', init);
  else init();
  window.idem = {token: token, once: once, arm: arm};
})();
