/** The environment the plugin reads: WHOHAS_URL and WHOHAS_TOKEN stand for --url and --token, KUBECTL for the kubectl to run. */
export interface PluginEnv {
  readonly WHOHAS_URL?: string;
  readonly WHOHAS_TOKEN?: string;
  readonly KUBECTL?: string;
}

/** pluginEnv reads them from this process's environment. */
export function pluginEnv(): PluginEnv {
  const { WHOHAS_URL, WHOHAS_TOKEN, KUBECTL } = process.env;
  return { WHOHAS_URL, WHOHAS_TOKEN, KUBECTL };
}
