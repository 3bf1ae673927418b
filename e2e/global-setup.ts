import { collectGarbage, requireRoot, startStack } from "@whohas/lab";

/** globalSetup starts the whole stack once; the returned function tears it down, also when tests fail. */
export default async function globalSetup(): Promise<() => Promise<void>> {
  await requireRoot();
  await collectGarbage();
  const stack = await startStack({ nodes: 3, vips: 2, kube: true });
  process.env.WHOHAS_E2E_URL = stack.url;
  process.env.WHOHAS_E2E_NODES = JSON.stringify(stack.lab.nodes.map((n) => ({ name: n.name, mac: n.mac })));
  process.env.WHOHAS_E2E_VIPS = JSON.stringify(stack.lab.vips);
  return () => stack.stop();
}
