import { randomBytes } from "node:crypto";

/** LAB_PREFIX starts every namespace a lab creates, so that `whohas-lab gc` finds leftovers and nothing else. */
export const LAB_PREFIX = "wh-";
/** LAB_STATE_DIR holds one folder per running lab: its owner pid, namespaces and the hub's agent socket. */
export const LAB_STATE_DIR = "/run/whohas-lab";

/** newLabId returns a short random id, unique per run (two labs never share a namespace name). */
export function newLabId(): string {
  return randomBytes(3).toString("hex");
}

/** LabNames are the names of everything one lab creates. */
export interface LabNames {
  readonly id: string;
  readonly switchNs: string;
  readonly clientNs: string;
  /** The hub's own namespace on the lab link, when the hub runs as a Pod on the cluster network would. */
  readonly hubNs: string;
  /** A host that is no node (a router, a VM, a forgotten keepalived), when a test adds one. */
  readonly strangerNs: string;
  nodeNs(i: number): string;
  readonly stateDir: string;
  readonly hubSocket: string;
}

export function labNames(id: string): LabNames {
  if (!/^[0-9a-f]{6}$/.test(id)) throw new TypeError(`lab id must be 6 hex digits, got ${JSON.stringify(id)}`);
  const stateDir = `${LAB_STATE_DIR}/${id}`;
  return {
    id,
    switchNs: `${LAB_PREFIX}${id}-sw`,
    clientNs: `${LAB_PREFIX}${id}-client`,
    hubNs: `${LAB_PREFIX}${id}-hub`,
    strangerNs: `${LAB_PREFIX}${id}-stranger`,
    nodeNs: (i) => `${LAB_PREFIX}${id}-n${i}`,
    stateDir,
    hubSocket: `${stateDir}/hub.sock`,
  };
}

/** labIdOfNs returns the lab id a namespace belongs to, or null for namespaces that are not ours. */
export function labIdOfNs(ns: string): string | null {
  return /^wh-([0-9a-f]{6})-/.exec(ns)?.[1] ?? null;
}

/** unixWsUrl is the ws+unix URL of a path served on a Unix socket (the ws package's form). */
export function unixWsUrl(socket: string, path: string): string {
  return `ws+unix://${socket}:${path}`;
}
