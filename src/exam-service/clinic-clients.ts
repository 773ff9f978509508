// One keep-alive exam-service client per clinic, built from configuration on first use. The worker's activities and
// the API's catalog routes share this; the api_key stays inside the client.
import { ExamServiceClient } from './client';

/** What the clients are built from: the configuration's clinics and exam-service settings (src/config.ts). */
export interface ClinicServiceSettings {
  clinics: readonly { clinicId: string; examServiceApiKey: string; examServiceBaseUrl?: string | undefined }[];
  examService: { baseUrl: string; connectTimeoutMs: number; requestTimeoutMs: number };
}

export function examServiceClients(config: ClinicServiceSettings) {
  const clients = new Map<string, ExamServiceClient>();
  return {
    /** The clinic's client; undefined for a clinic that is not configured. */
    forClinic(clinicId: string): ExamServiceClient | undefined {
      const clinic = config.clinics.find((c) => c.clinicId === clinicId);
      if (!clinic) return undefined;
      let client = clients.get(clinicId);
      if (!client) {
        client = new ExamServiceClient({
          baseUrl: clinic.examServiceBaseUrl ?? config.examService.baseUrl,
          apiKey: clinic.examServiceApiKey,
          connectTimeoutMs: config.examService.connectTimeoutMs,
          requestTimeoutMs: config.examService.requestTimeoutMs,
        });
        clients.set(clinicId, client);
      }
      return client;
    },
    async close() {
      await Promise.all([...clients.values()].map((c) => c.close()));
      clients.clear();
    },
  };
}
