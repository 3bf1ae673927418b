import { InterfaceInfoSchema, MAX_HELLO_INTERFACES, NodeFactsSchema, isNodeName, type InterfaceInfo, type NodeFacts } from "@whohas/core";
import type { Db } from "./db.js";

/** A StoredAgent is what the hub remembers of an agent across restarts. */
export interface StoredAgent {
  readonly node: string;
  readonly version: string;
  readonly firstSeen: number;
  readonly lastSeen: number;
  readonly interfaces: InterfaceInfo[];
  readonly facts: NodeFacts | null;
  readonly dropped: number;
}

/** The AgentsRepo remembers each node's agent (identity, interfaces, facts) across restarts; writes are batched. */
export class AgentsRepo {
  readonly #dirty = new Map<string, StoredAgent>();

  constructor(readonly db: Db) {}

  /** save remembers an agent's identity and facts (written at the next flush). */
  save(a: StoredAgent): void {
    this.#dirty.set(a.node, a);
  }

  /** takeDirty takes the agents that changed since the last call, to write. */
  takeDirty(): StoredAgent[] {
    const agents = [...this.#dirty.values()];
    this.#dirty.clear();
    return agents;
  }

  /** writeDirty writes taken agents through `db`, the caller's transaction. */
  async writeDirty(db: Db, agents: readonly StoredAgent[]): Promise<void> {
    for (const a of agents) {
      await db.run(
        `INSERT INTO agents (node, version, first_seen, last_seen, interfaces, facts, dropped) VALUES (?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (node) DO UPDATE SET version = excluded.version, last_seen = excluded.last_seen, interfaces = excluded.interfaces,
           facts = COALESCE(excluded.facts, agents.facts), dropped = excluded.dropped`,
        [
          a.node,
          a.version,
          a.firstSeen,
          a.lastSeen,
          JSON.stringify(a.interfaces),
          a.facts === null ? null : JSON.stringify(a.facts),
          a.dropped,
        ],
      );
    }
  }

  /** unwritten takes back agents whose write failed, unless a newer state of one came meanwhile. */
  unwritten(agents: readonly StoredAgent[]): void {
    for (const a of agents) if (!this.#dirty.has(a.node)) this.#dirty.set(a.node, a);
  }

  /** pending tells whether agents wait to be written. */
  get pending(): boolean {
    return this.#dirty.size > 0;
  }

  /** forget deletes a node's agent. */
  async forget(node: string): Promise<void> {
    this.#dirty.delete(node);
    await this.db.run("DELETE FROM agents WHERE node = ?", [node]);
  }

  /**
   * list reads every stored agent back. What no longer passes the wire's bounds (a database written by an older hub,
   * or edited by hand) is read as unknown: the agent sends it again when it reconnects.
   */
  async list(): Promise<StoredAgent[]> {
    return (
      await this.db.all<{
        node: string;
        version: string;
        first_seen: number;
        last_seen: number;
        interfaces: string;
        facts: string | null;
        dropped: number;
      }>("SELECT * FROM agents ORDER BY node")
    )
      .filter((r) => isNodeName(r.node))
      .map((r) => ({
        node: r.node,
        version: r.version,
        firstSeen: r.first_seen,
        lastSeen: r.last_seen,
        interfaces: readJson(r.interfaces, (v) => InterfaceInfoSchema.array().max(MAX_HELLO_INTERFACES).safeParse(v).data) ?? [],
        facts: r.facts === null ? null : (readJson(r.facts, (v) => NodeFactsSchema.safeParse(v).data) ?? null),
        dropped: r.dropped,
      }));
  }
}

function readJson<T>(text: string, check: (v: unknown) => T | undefined): T | undefined {
  try {
    return check(JSON.parse(text));
  } catch {
    return undefined;
  }
}
