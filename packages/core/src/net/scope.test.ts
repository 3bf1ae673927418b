import { describe, expect, it } from "vitest";
import { addressScope } from "./scope.js";

describe("addressScope", () => {
  it.each([
    { case: "public IPv4", ip: "93.184.216.34", scope: "public" },
    { case: "loopback", ip: "127.0.0.1", scope: "loopback" },
    { case: "loopback, anywhere in 127/8", ip: "127.255.0.9", scope: "loopback" },
    { case: "cloud metadata", ip: "169.254.169.254", scope: "link-local" },
    { case: "RFC 1918 10/8", ip: "10.1.2.3", scope: "private" },
    { case: "RFC 1918 172.16/12 low edge", ip: "172.16.0.1", scope: "private" },
    { case: "RFC 1918 172.16/12 high edge", ip: "172.31.255.254", scope: "private" },
    { case: "just outside 172.16/12", ip: "172.32.0.1", scope: "public" },
    { case: "RFC 1918 192.168/16", ip: "192.168.1.1", scope: "private" },
    { case: "shared address space", ip: "100.64.0.1", scope: "private" },
    { case: "unspecified", ip: "0.0.0.0", scope: "unspecified" },
    { case: "this network", ip: "0.1.2.3", scope: "unspecified" },
    { case: "benchmarking range", ip: "198.18.0.10", scope: "reserved" },
    { case: "multicast", ip: "224.0.0.251", scope: "reserved" },
    { case: "broadcast", ip: "255.255.255.255", scope: "reserved" },
    { case: "IPv6 public", ip: "2606:4700::1111", scope: "public" },
    { case: "IPv6 loopback", ip: "::1", scope: "loopback" },
    { case: "IPv6 unspecified", ip: "::", scope: "unspecified" },
    { case: "IPv6 link-local", ip: "fe80::1", scope: "link-local" },
    { case: "IPv6 unique local", ip: "fd00:ec2::254", scope: "private" },
    { case: "IPv4-mapped loopback", ip: "::ffff:127.0.0.1", scope: "loopback" },
    { case: "IPv4-mapped metadata in hex", ip: "::ffff:a9fe:a9fe", scope: "link-local" },
    { case: "NAT64 of a private address", ip: "64:ff9b::10.0.0.1", scope: "private" },
    { case: "IPv6 multicast", ip: "ff02::1", scope: "reserved" },
    { case: "SIIT-translated loopback", ip: "::ffff:0:7f00:1", scope: "loopback" },
    { case: "SIIT-translated metadata", ip: "::ffff:0:169.254.169.254", scope: "link-local" },
    { case: "local-use NAT64", ip: "64:ff9b:1::7f00:1", scope: "private" },
    { case: "6to4 of loopback", ip: "2002:7f00:1::", scope: "loopback" },
    { case: "6to4 of a public address", ip: "2002:5db8:d822::1", scope: "public" },
    { case: "Teredo", ip: "2001:0:4136:e378:8000:63bf:3fff:fdd2", scope: "reserved" },
    { case: "IPv6 site-local (deprecated)", ip: "fec0::1", scope: "private" },
    { case: "IPv4-compatible range", ip: "::2", scope: "reserved" },
  ])("$case: $ip is $scope", ({ ip, scope }) => {
    expect(addressScope(ip)).toBe(scope);
  });

  it("returns null for text that is no address", () => {
    expect(addressScope("localhost")).toBeNull();
    expect(addressScope("1.2.3")).toBeNull();
  });
});
