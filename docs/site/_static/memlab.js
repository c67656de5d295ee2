// The theme listens to the first .primary-toggle and the first .secondary-toggle of a page: the
// header's, which this layout hides. The article header's buttons, the ones shown, pass their
// clicks on to them, so the navigation and the contents open on a narrow screen too.
document.addEventListener("DOMContentLoaded", function () {
  ["primary", "secondary"].forEach(function (side) {
    var all = document.querySelectorAll("." + side + "-toggle");
    for (var i = 1; i < all.length; i++) {
      all[i].addEventListener("click", function (e) {
        e.preventDefault();
        e.stopPropagation();
        all[0].click();
      });
    }
  });
});
