"use client";
import { useId, type ReactNode, type RefObject } from "react";

/**
 * ConfirmDialog asks before an action that changes the cluster or the network: a modal with the question, what will
 * happen, the action and Cancel. Open it with openConfirm (the focus starts on Cancel); `onConfirm` runs only when
 * the action button closed it.
 */
export function ConfirmDialog(props: {
  readonly dialogRef: RefObject<HTMLDialogElement | null>;
  readonly title: ReactNode;
  readonly action: ReactNode;
  /** The action button's test id. */
  readonly testId: string;
  readonly onConfirm: () => void;
  readonly children: ReactNode;
}) {
  const id = useId();
  const { dialogRef, onConfirm } = props;
  return (
    <dialog ref={dialogRef} aria-labelledby={id} onClose={() => dialogRef.current?.returnValue === "yes" && onConfirm()}>
      <form method="dialog">
        <h3 id={id}>{props.title}</h3>
        <p>{props.children}</p>
        <div className="actions">
          <button value="yes" data-testid={props.testId}>
            {props.action}
          </button>
          <button value="no">Cancel</button>
        </div>
      </form>
    </dialog>
  );
}
