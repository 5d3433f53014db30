/**
 * The copy buttons of long values (DKIM keys, DNS records, headers, one-time secrets): every `.copy` element of a page
 * gets a Copy button beside it, made by this script of the console's own origin (/admin/static/copy.js), so a page
 * without JavaScript shows no button that does nothing: there one click still selects the whole value (CSS
 * `user-select: all`). The clipboard API needs a secure context; elsewhere the value is selected and copied the old way.
 */
export const COPY_SCRIPT = `(function () {
  function copied(button, ok) {
    button.textContent = ok ? 'Copied' : 'Selected: press Ctrl+C';
    setTimeout(function () { button.textContent = 'Copy'; }, 2000);
  }
  function select(node) {
    var range = document.createRange();
    range.selectNodeContents(node);
    var selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
  }
  document.querySelectorAll('.copy').forEach(function (node, i) {
    var button = document.createElement('button');
    button.type = 'button';
    button.className = 'copy-button';
    button.textContent = 'Copy';
    if (!node.id) node.id = 'copy-value-' + i;
    button.setAttribute('aria-describedby', node.id);
    button.addEventListener('click', function () {
      var text = node.textContent;
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(text).then(function () { copied(button, true); }, function () { select(node); copied(button, false); });
      } else {
        select(node);
        var ok = false;
        try { ok = document.execCommand('copy'); } catch (e) { ok = false; }
        copied(button, ok);
      }
    });
    node.insertAdjacentElement('afterend', button);
  });
})();
`;

/** Whether a page holds a value to copy (and so loads the script). */
export const holdsCopies = (html: string): boolean => /class="copy\b/.test(html);
