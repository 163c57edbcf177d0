// Forgetting is for good: ask once more before the form goes.
document.getElementById("forget")?.addEventListener("submit", (event) => {
  if (!window.confirm("Forget this memory for good, on every store memd keeps?")) event.preventDefault();
});
