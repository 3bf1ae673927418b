import { describe, expect, it } from "vitest";
import { PatchError, jsonPatch, mergePatch, strategicMergePatch, type Json } from "./patch.js";
import { labelMatches } from "./routes.js";

describe("mergePatch (RFC 7386)", () => {
  it.each([
    { doc: { a: "b" }, patch: { a: "c" }, out: { a: "c" } },
    { doc: { a: "b" }, patch: { b: "c" }, out: { a: "b", b: "c" } },
    { doc: { a: "b" }, patch: { a: null }, out: {} },
    { doc: { a: ["b"] }, patch: { a: ["c"] }, out: { a: ["c"] } },
    { doc: { a: { b: "c" } }, patch: { a: { b: "d", c: null } }, out: { a: { b: "d" } } },
  ] as { doc: Json; patch: Json; out: Json }[])("$patch", ({ doc, patch, out }) => expect(mergePatch(doc, patch)).toEqual(out));
});

describe("strategicMergePatch", () => {
  it("merges containers by name and deletes with $patch", () => {
    const doc = {
      spec: {
        containers: [
          { name: "a", image: "1" },
          { name: "b", image: "1" },
        ],
      },
    };
    expect(
      strategicMergePatch(doc, {
        spec: {
          containers: [
            { name: "b", image: "2" },
            { name: "c", image: "3" },
          ],
        },
      }),
    ).toEqual({
      spec: {
        containers: [
          { name: "a", image: "1" },
          { name: "b", image: "2" },
          { name: "c", image: "3" },
        ],
      },
    });
    expect(strategicMergePatch(doc, { spec: { containers: [{ name: "a", $patch: "delete" }] } })).toEqual({
      spec: { containers: [{ name: "b", image: "1" }] },
    });
  });
  it("merges the restartedAt annotation into the pod template (kubectl rollout restart)", () => {
    const ds = { spec: { template: { metadata: { labels: { app: "x" } } } } };
    const patch = { spec: { template: { metadata: { annotations: { "kubectl.kubernetes.io/restartedAt": "2026-11-29T00:00:00Z" } } } } };
    expect(strategicMergePatch(ds, patch)).toEqual({
      spec: {
        template: { metadata: { labels: { app: "x" }, annotations: { "kubectl.kubernetes.io/restartedAt": "2026-11-29T00:00:00Z" } } },
      },
    });
  });
});

describe("jsonPatch (RFC 6902)", () => {
  const doc = { data: { a: "1" }, list: [1, 2] };
  it("adds, replaces, removes, moves, copies and tests", () => {
    expect(
      jsonPatch(doc, [
        { op: "add", path: "/data/b", value: "2" },
        { op: "replace", path: "/data/a", value: "x" },
        { op: "remove", path: "/list/0" },
        { op: "add", path: "/list/-", value: 3 },
      ]),
    ).toEqual({ data: { a: "x", b: "2" }, list: [2, 3] });
    expect(
      jsonPatch(doc, [
        { op: "copy", from: "/data/a", path: "/data/c" },
        { op: "move", from: "/data/a", path: "/data/d" },
      ]),
    ).toEqual({ data: { c: "1", d: "1" }, list: [1, 2] });
    expect(doc).toEqual({ data: { a: "1" }, list: [1, 2] }); // the input is not touched
  });
  it.each([
    { ops: [{ op: "test", path: "/data/a", value: "2" }], msg: /test failed/ },
    { ops: [{ op: "replace", path: "/data/zz", value: "2" }], msg: /not found/ },
    { ops: [{ op: "jump", path: "/x" }], msg: /unknown operation/ },
    { ops: { op: "add" }, msg: /array of operations/ },
  ])("refuses $ops", ({ ops, msg }) => {
    expect(() => jsonPatch(doc, ops)).toThrow(PatchError);
    expect(() => jsonPatch(doc, ops)).toThrow(msg);
  });
});

describe("labelMatches", () => {
  const labels = { app: "kube-proxy", tier: "node" };
  it.each([
    ["app=kube-proxy", true],
    ["app==kube-proxy", true],
    ["app!=kube-proxy", false],
    ["app", true],
    ["!app", false],
    ["tier in (node,edge)", true],
    ["tier notin (node)", false],
    ["app=kube-proxy,tier=edge", false],
    ["", true],
  ] as const)("%s -> %s", (sel, want) => expect(labelMatches(sel, labels)).toBe(want));
});
