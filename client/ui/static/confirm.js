// Forgetting is for good: ask once more, with the count, before the form goes.
const form = document.getElementById("forget");
form?.addEventListener("submit", (event) => {
  const count = Number(form.dataset.count || "1");
  const what = count === 1 ? "this memory" : `these ${count} memories`;
  if (!window.confirm(`Forget ${what} for good, on every store memd keeps?`)) event.preventDefault();
});
