import { isMap, isScalar, parseDocument, type Node, type Pair, type YAMLMap } from "yaml";

/** The API group of KubeProxyConfiguration (kubeadm writes kubeproxy.config.k8s.io/v1alpha1). */
export const KUBE_PROXY_API_GROUP = "kubeproxy.config.k8s.io";
export const KUBE_PROXY_KIND = "KubeProxyConfiguration";

/** A KubeProxyConfig is what whohas reads of `config.conf` in ConfigMap kube-system/kube-proxy. */
export interface KubeProxyConfig {
  /** The mode as written: "" and absent mean iptables on Linux. */
  readonly modeRaw: string;
  readonly mode: "ipvs" | "iptables" | "nftables" | "other";
  /** ipvs.strictARP; absent means false. */
  readonly strictARP: boolean;
  /** Whether ipvs.strictARP is written at all. */
  readonly strictARPPresent: boolean;
}

/** A ConfigRefusal explains why a text cannot be read or patched, in words a person can act on. */
export interface ConfigRefusal {
  readonly ok: false;
  readonly reason: "not-yaml" | "not-kube-proxy-config" | "mode-not-ipvs" | "unexpected-shape";
  readonly message: string;
}

const refuse = (reason: ConfigRefusal["reason"], message: string): ConfigRefusal => ({ ok: false, reason, message });

interface Loaded {
  readonly ok: true;
  readonly root: YAMLMap;
  /** The document as plain values, for reading; `root` gives source positions, for editing. */
  readonly js: Record<string, unknown>;
}

function load(text: string): Loaded | ConfigRefusal {
  const doc = parseDocument(text);
  const err = doc.errors[0];
  if (err !== undefined) return refuse("not-yaml", `config.conf is not valid YAML: ${err.message.split("\n")[0] ?? ""}`);
  const root = doc.contents;
  if (!isMap(root)) return refuse("not-kube-proxy-config", "config.conf is not a YAML mapping");
  const js = doc.toJS() as Record<string, unknown>;
  const kind = js.kind;
  const apiVersion = js.apiVersion;
  if (kind !== KUBE_PROXY_KIND || typeof apiVersion !== "string" || !apiVersion.startsWith(`${KUBE_PROXY_API_GROUP}/`)) {
    return refuse(
      "not-kube-proxy-config",
      `config.conf is not a ${KUBE_PROXY_KIND} (kind ${JSON.stringify(kind)}, apiVersion ${JSON.stringify(apiVersion)})`,
    );
  }
  return { ok: true, root, js };
}

function readConfig(js: Record<string, unknown>): KubeProxyConfig | ConfigRefusal {
  const rawMode = js.mode;
  const modeRaw = typeof rawMode === "string" ? rawMode : rawMode === null || rawMode === undefined ? "" : JSON.stringify(rawMode);
  const mode =
    modeRaw === "" || modeRaw === "iptables" ? "iptables" : modeRaw === "ipvs" ? "ipvs" : modeRaw === "nftables" ? "nftables" : "other";
  const ipvs = js.ipvs;
  if (ipvs !== undefined && ipvs !== null && (typeof ipvs !== "object" || Array.isArray(ipvs))) {
    return refuse("unexpected-shape", "ipvs in config.conf is not a mapping");
  }
  const strict = ipvs === undefined || ipvs === null ? undefined : (ipvs as Record<string, unknown>).strictARP;
  if (strict !== undefined && strict !== null && typeof strict !== "boolean") {
    return refuse("unexpected-shape", `ipvs.strictARP is ${JSON.stringify(strict)}, not true or false`);
  }
  return { modeRaw, mode, strictARP: strict === true, strictARPPresent: strict !== undefined && strict !== null };
}

/** parseKubeProxyConfig reads mode and ipvs.strictARP from a KubeProxyConfiguration text. */
export function parseKubeProxyConfig(text: string): { ok: true; value: KubeProxyConfig } | ConfigRefusal {
  const l = load(text);
  if (!l.ok) return l;
  const c = readConfig(l.js);
  return "ok" in c ? c : { ok: true, value: c };
}

function lineStart(text: string, offset: number): number {
  return text.lastIndexOf("\n", offset - 1) + 1;
}

/**
 * patchStrictArp returns the text with `ipvs.strictARP: true`, changing nothing else: comments, key order, quoting
 * and every other byte stay as they were. It edits the source text at the positions the YAML document API reports
 * (so kubeadm, which reads this ConfigMap back on upgrade, sees the user's text plus one line), then re-parses the
 * result and refuses if anything but strictARP differs. Refuses when the mode is not ipvs: iptables and nftables
 * bind no LoadBalancer IPs to an interface, so there is nothing to fix.
 */
export function patchStrictArp(text: string): { ok: true; text: string; changed: boolean; before: KubeProxyConfig } | ConfigRefusal {
  const l = load(text);
  if (!l.ok) return l;
  const before = readConfig(l.js);
  if ("ok" in before) return before;
  if (before.mode !== "ipvs") {
    return refuse(
      "mode-not-ipvs",
      `kube-proxy mode is ${before.modeRaw === "" ? '"" (iptables)' : before.modeRaw}: only IPVS mode binds LoadBalancer IPs to kube-ipvs0, so strictARP has nothing to fix`,
    );
  }
  if (before.strictARP) return { ok: true, text, changed: false, before };
  const patched = splice(text, l.root);
  if (typeof patched !== "string") return patched;
  const check = verify(text, patched);
  return check === null ? { ok: true, text: patched, changed: true, before } : check;
}

function splice(text: string, root: YAMLMap): string | ConfigRefusal {
  const ipvsPair = root.items.find((p) => isScalar(p.key) && p.key.value === "ipvs") as Pair<Node, Node | null> | undefined;
  const ipvs = ipvsPair?.value ?? null;
  if (ipvsPair === undefined) {
    // No ipvs block at all: add one at the end of the document.
    const body = text.endsWith("\n") || text === "" ? text : `${text}\n`;
    return `${body}ipvs:\n  strictARP: true\n`;
  }
  if (ipvs === null || (isScalar(ipvs) && ipvs.value === null)) {
    const keyEnd = ipvsPair.key.range?.[1];
    if (keyEnd === undefined) return refuse("unexpected-shape", "cannot locate ipvs in config.conf");
    const colon = text.indexOf(":", keyEnd);
    const eol = text.indexOf("\n", colon);
    const end = eol === -1 ? text.length : eol;
    return `${text.slice(0, colon + 1)} {strictARP: true}${text.slice(end)}`;
  }
  if (!isMap(ipvs)) return refuse("unexpected-shape", "ipvs in config.conf is not a mapping");
  const strictPair = ipvs.items.find((p) => isScalar(p.key) && p.key.value === "strictARP") as Pair<Node, Node | null> | undefined;
  const value = strictPair?.value;
  if (strictPair !== undefined && value?.range) {
    // strictARP: false (or null) written: replace just the value's characters.
    const [start, end] = value.range;
    return `${text.slice(0, start)}true${text.slice(end)}`;
  }
  if (strictPair !== undefined) return refuse("unexpected-shape", "ipvs.strictARP has no value to replace");
  if (ipvs.flow === true) {
    const open = ipvs.range?.[0];
    if (open === undefined) return refuse("unexpected-shape", "cannot locate the ipvs mapping");
    const empty = ipvs.items.length === 0;
    return `${text.slice(0, open + 1)}strictARP: true${empty ? "" : ", "}${text.slice(open + 1)}`;
  }
  // Block mapping without strictARP: insert a line in alphabetical place (kubeadm writes keys sorted), same indent.
  const first = ipvs.items[0]?.key as Node | undefined;
  const firstStart = first?.range?.[0];
  if (firstStart === undefined) return refuse("unexpected-shape", "cannot locate the keys of ipvs");
  const indent = " ".repeat(firstStart - lineStart(text, firstStart));
  const after = ipvs.items.find((p) => isScalar(p.key) && String(p.key.value) > "strictARP")?.key as Node | undefined;
  if (after?.range) {
    const at = lineStart(text, after.range[0]);
    return `${text.slice(0, at)}${indent}strictARP: true\n${text.slice(at)}`;
  }
  // strictARP sorts after every key: add it on the line after the block's last one.
  const end = ipvs.range?.[1] ?? text.length;
  let at: number;
  if (text[end - 1] === "\n") at = end;
  else {
    const nl = text.indexOf("\n", end);
    at = nl === -1 ? text.length : nl + 1;
  }
  const prefix = text.slice(0, at);
  return `${prefix}${prefix.endsWith("\n") ? "" : "\n"}${indent}strictARP: true\n${text.slice(at)}`;
}

/** verify re-parses the patched text: strictARP must be true and everything else equal to the original. */
function verify(original: string, patched: string): ConfigRefusal | null {
  const a = parseDocument(original).toJS() as Record<string, unknown>;
  const bDoc = parseDocument(patched);
  if (bDoc.errors.length > 0) return refuse("unexpected-shape", "patching config.conf would break its YAML; patch it by hand");
  const b = bDoc.toJS() as Record<string, unknown>;
  const strip = (o: Record<string, unknown>) => {
    const ipvs = { ...((o.ipvs ?? {}) as Record<string, unknown>) };
    delete ipvs.strictARP;
    return JSON.stringify({ ...o, ipvs });
  };
  const ipvsB = (b.ipvs ?? {}) as Record<string, unknown>;
  if (ipvsB.strictARP !== true || strip(a) !== strip(b))
    return refuse("unexpected-shape", "patching config.conf would change more than ipvs.strictARP; patch it by hand");
  return null;
}
