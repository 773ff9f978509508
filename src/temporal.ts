// Connections to Temporal shared by the worker, the API and the scripts: one place for address, namespace, TLS
// (Temporal Cloud with mTLS or an API key) and, later, the payload codec.
import { readFileSync } from 'node:fs';
import { Client, Connection, type ConnectionOptions } from '@temporalio/client';
import { NativeConnection, type NativeConnectionOptions } from '@temporalio/worker';
import type { Config } from './config';

type TemporalConfig = Config['temporal'];

function tlsOf(t: TemporalConfig): ConnectionOptions['tls'] {
  if (t.tlsCertPath && t.tlsKeyPath) {
    return { clientCertPair: { crt: readFileSync(t.tlsCertPath), key: readFileSync(t.tlsKeyPath) } };
  }
  return t.tls || Boolean(t.apiKey);
}

export function connectionOptions(t: TemporalConfig): ConnectionOptions & NativeConnectionOptions {
  return { address: t.address, tls: tlsOf(t), ...(t.apiKey ? { apiKey: t.apiKey } : {}) };
}

export async function connectClient(t: TemporalConfig): Promise<Client> {
  const connection = await Connection.connect(connectionOptions(t));
  return new Client({ connection, namespace: t.namespace });
}

export function connectWorkerConnection(t: TemporalConfig): Promise<NativeConnection> {
  return NativeConnection.connect(connectionOptions(t));
}
