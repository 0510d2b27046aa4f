// Reload every few seconds to show the run as it grows, but never while someone is typing.
const seconds = Number(document.body.dataset.refresh || 0);
if (seconds > 0) {
  setInterval(() => {
    const busy = [...document.querySelectorAll("input:not([type=hidden])")].some(
      (field) => field.value !== "" || field === document.activeElement);
    if (!busy) location.reload();
  }, seconds * 1000);
}
