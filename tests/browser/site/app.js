// Says, in the page, what arrived: that this script ran, each image's
// decoded width (0 if it did not load) and h1's colour from style.css.
window.addEventListener("load", function () {
  var images = Array.prototype.map.call(document.images, function (img) {
    return img.id + ":" + img.naturalWidth;
  });
  var result = document.getElementById("result");
  result.textContent = "script ran; images " + images.join(", ");
  document.body.dataset.script = "ran";
  document.body.dataset.images = images.join(",");
  document.body.dataset.h1 = getComputedStyle(document.querySelector("h1")).color;
});
