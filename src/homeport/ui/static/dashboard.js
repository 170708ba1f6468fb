// "/" focuses the search box (unless already typing somewhere); Escape leaves it.
document.addEventListener("keydown", function (event) {
  var search = document.getElementById("search");
  if (!search) return;
  var target = event.target;
  var typing = target && (target.tagName === "INPUT" || target.tagName === "TEXTAREA" || target.isContentEditable);
  if (event.key === "/" && !typing && !event.ctrlKey && !event.metaKey && !event.altKey) {
    event.preventDefault();
    search.focus();
    search.select();
  } else if (event.key === "Escape" && target === search) {
    search.blur();
  }
});
