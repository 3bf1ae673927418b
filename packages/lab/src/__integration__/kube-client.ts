import { execFile } from "node:child_process";
import { promisify } from "node:util";

const exec = promisify(execFile);

/** kubectl runs kubectl against the stack's test API server, as an operator at a terminal would. */
export async function kubectl(stack: { readonly lab: { readonly names: { readonly stateDir: string } } }, ...args: string[]) {
  return exec("kubectl", ["--kubeconfig", `${stack.lab.names.stateDir}/kubeconfig`, ...args], { timeout: 90_000 });
}

type StackLike = Parameters<typeof kubectl>[0];

/** kubeProxyConfig is config.conf of kube-proxy's ConfigMap, read with kubectl. */
export async function kubeProxyConfig(stack: StackLike): Promise<string> {
  return (await kubectl(stack, "-n", "kube-system", "get", "configmap", "kube-proxy", "-o", "jsonpath={.data.config\\.conf}")).stdout;
}

/** setKubeProxyConfig replaces config.conf of kube-proxy's ConfigMap with kubectl patch, as a person would. */
export async function setKubeProxyConfig(stack: StackLike, text: string): Promise<void> {
  await kubectl(
    stack,
    "-n",
    "kube-system",
    "patch",
    "configmap",
    "kube-proxy",
    "--type",
    "merge",
    "-p",
    JSON.stringify({ data: { "config.conf": text } }),
  );
}
