/**
 * KUBEADM_KUBE_PROXY_CONFIG is config.conf as kubeadm v1.32 writes it into ConfigMap kube-system/kube-proxy (keys
 * sorted, mode "" unless set), here in IPVS mode with strictARP false, its default. The text whohas reads and patches
 * in a real cluster: its tests parse it, and the lab seeds its test API server with it.
 */
export const KUBEADM_KUBE_PROXY_CONFIG = `apiVersion: kubeproxy.config.k8s.io/v1alpha1
bindAddress: 0.0.0.0
bindAddressHardFail: false
clientConnection:
  acceptContentTypes: ""
  burst: 0
  contentType: ""
  kubeconfig: /var/lib/kube-proxy/kubeconfig.conf
  qps: 0
clusterCIDR: 10.244.0.0/16
configSyncPeriod: 0s
conntrack:
  maxPerCore: null
  min: null
  tcpCloseWaitTimeout: null
  tcpEstablishedTimeout: null
detectLocalMode: ""
enableProfiling: false
healthzBindAddress: ""
hostnameOverride: ""
iptables:
  localhostNodePorts: null
  masqueradeAll: false
  masqueradeBit: null
  minSyncPeriod: 0s
  syncPeriod: 0s
ipvs:
  excludeCIDRs: null
  minSyncPeriod: 0s
  scheduler: ""
  strictARP: false
  syncPeriod: 0s
  tcpFinTimeout: 0s
  tcpTimeout: 0s
  udpTimeout: 0s
kind: KubeProxyConfiguration
logging:
  flushFrequency: 0
  options:
    json:
      infoBufferSize: "0"
  verbosity: 0
metricsBindAddress: ""
mode: ipvs
nodePortAddresses: null
oomScoreAdj: null
portRange: ""
showHiddenMetricsForAlpha: ""
udpIdleTimeout: 0s
winkernel:
  enableDSR: false
  forwardHealthCheckVip: false
  networkName: ""
  rootHnsEndpointName: ""
  sourceVip: ""
`;

/**
 * Where kubeadm keeps kube-proxy: its configuration in ConfigMap kube-system/kube-proxy under config.conf, and its
 * DaemonSet of the same name. whohas watches, patches, backs up and restarts them there.
 */
export const KUBE_PROXY_NAMESPACE = "kube-system";
export const KUBE_PROXY_NAME = "kube-proxy";
export const KUBE_PROXY_CONFIG_KEY = "config.conf";
