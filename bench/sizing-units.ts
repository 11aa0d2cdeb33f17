/**
 * svc's rates in Keycloak's sizing units: operations per second per vCPU, beside what Keycloak
 * plans. Keycloak's "Concepts for sizing CPU and memory resources" (high-availability guide,
 * keycloak.org) says:
 *
 *   "For each 15 password-based user logins per second, allocate 1 vCPU to the cluster (tested
 *   with up to 300 per second)."
 *   "For each 120 refresh token requests per second, 1 vCPU to the cluster (tested with up to 435
 *   refresh token requests per second)."
 *
 * measured on ARM (c7g) instances, with Argon2 password hashing and sessions in the database; its
 * footnote adds that on x86 instances refresh token workloads gave up to twice the operations per
 * core, and password hashing the same.
 *
 * Two figures per rate, since the bench's machine also runs the load generator and the directory:
 * the rate over the machine's vCPUs (everything the run needed, a floor), and 1,000 ms over svc's
 * own CPU per operation (what one vCPU given to svc alone would do, Keycloak's way of counting).
 */
export const KEYCLOAK_LOGINS_PER_VCPU = 15;
export const KEYCLOAK_REFRESH_GRANTS_PER_VCPU = 120;

/** One line: `rate` per vCPU of the machine and per vCPU of the server's own CPU, beside Keycloak's figure. */
export function perVcpuLine(what: string, ratePerS: number, vcpus: number, serverCpuMsPerOp: number | undefined, keycloak: number): string {
  const own = serverCpuMsPerOp === undefined || !(serverCpuMsPerOp > 0) ? 'n/a' : (1000 / serverCpuMsPerOp).toFixed(0);
  return `${what.padEnd(22)} ${(ratePerS / vcpus).toFixed(1).padStart(7)} /s per vCPU of the machine (${ratePerS.toFixed(1)} /s on ${vcpus}), `
    + `${own} /s per vCPU of its own CPU; Keycloak plans ${keycloak} /s per vCPU`;
}
