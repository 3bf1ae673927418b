import type { WebSocket } from "ws";
import type { CommandResult, EvidenceAnswer } from "@whohas/core";

/**
 * Awaited is what the hub waits for from agents: the results of each command (probe-result, probe-many-result, up to
 * command-done) and the answer to each evidence-request, by id. Each is taken only from the connection it was sent
 * on: another agent cannot forge a probe's replies or a node's frames.
 */
export class Awaited {
  readonly #results = new Map<string, { readonly ws: WebSocket; readonly onResult: (m: CommandResult) => void }>();
  /** Who waits for each answer (called with null when the connection closes first). */
  readonly #evidence = new Map<string, { readonly ws: WebSocket; readonly onAnswer: (m: EvidenceAnswer | null) => void }>();

  /** results sends command `id`'s results from `ws` to `onResult`, until its command-done. */
  results(id: string, ws: WebSocket, onResult: (m: CommandResult) => void): void {
    this.#results.set(id, { ws, onResult });
  }

  /** abandon stops waiting for a command's results. */
  abandon(id: string): void {
    this.#results.delete(id);
  }

  /** answer sends evidence-request `id`'s answer from `ws` to `onAnswer`; returns a function that stops waiting. */
  answer(id: string, ws: WebSocket, onAnswer: (m: EvidenceAnswer | null) => void): () => void {
    this.#evidence.set(id, { ws, onAnswer });
    return () => this.#evidence.delete(id);
  }

  /** takeResult hands a command's result on; false when `ws` was not the connection the command was sent on. */
  takeResult(m: CommandResult, ws: WebSocket): boolean {
    const waiting = this.#results.get(m.id);
    if (waiting?.ws !== ws) return false;
    waiting.onResult(m);
    if (m.type === "command-done") this.#results.delete(m.id);
    return true;
  }

  /**
   * takeAnswer hands an evidence answer on; false when `ws` was not the connection asked. An answer that came after
   * its request timed out is taken and dropped: nobody waits for it any more.
   */
  takeAnswer(m: EvidenceAnswer, ws: WebSocket): boolean {
    const waiting = this.#evidence.get(m.id);
    if (waiting === undefined) return true;
    if (waiting.ws !== ws) return false;
    this.#evidence.delete(m.id);
    waiting.onAnswer(m);
    return true;
  }

  /** closed forgets what `ws` was to send; who waited for its evidence hears null. */
  closed(ws: WebSocket): void {
    for (const [id, w] of this.#results) if (w.ws === ws) this.#results.delete(id);
    for (const [id, w] of this.#evidence)
      if (w.ws === ws) {
        this.#evidence.delete(id);
        w.onAnswer(null);
      }
  }
}
