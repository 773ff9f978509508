export { buildSandbox, type Sandbox, type SandboxOptions } from './server';
export { SandboxClock, type ClockMode } from './clock';
export { SandboxConfig, resolveSandboxConfig, sandboxConfigFromEnv } from './config';
export { SandboxFaults, type SandboxFaultsInput } from './faults';
export { SandboxStore, type DeliveryRecord, type PatientExamRecord, type PatientExamStatus } from './store';
export * from './seed';
