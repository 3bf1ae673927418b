/**
 * openConfirm shows a confirmation dialog with the focus on its Cancel button (`value="no"`): Enter or Space pressed
 * out of habit then cancels instead of changing the cluster, and Tab leads to the action. (showModal alone focuses
 * the first button, the action.)
 */
export function openConfirm(d: HTMLDialogElement | null): void {
  if (d === null) return;
  d.returnValue = "";
  d.showModal();
  d.querySelector<HTMLButtonElement>('button[value="no"]')?.focus();
}
