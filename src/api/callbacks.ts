// From the contract's parsed callback to what the journey acts on. The raw payload travels beside it for audit.
import type { NormalizedCallback } from '../exam-service/schemas';
import type { JourneyCallback } from '../workflows/journey-state';

const str = (v: string | number | null | undefined): string | null =>
  v === undefined || v === null ? null : String(v);

export function toJourneyCallback(cb: NormalizedCallback): JourneyCallback {
  switch (cb.event) {
    case 1:
      return {
        event: 1,
        patientExamId: cb.patientExamId,
        examId: cb.examId,
        examStatus: cb.examStatus,
        rxStatus: cb.payload.rx_status ?? null,
        examUrl: cb.payload.exam_url ?? null,
        providerName: cb.payload.provider_name ?? null,
        reason: cb.payload.reason ?? null,
      };
    case 2:
      return {
        event: 2,
        patientExamId: cb.patientExamId,
        examId: cb.examId,
        rxStatus: cb.payload.rx_status ?? null,
        prescribedOrderSetId:
          cb.payload.prescribed_os_id === undefined ? null : Number(cb.payload.prescribed_os_id) || null,
        prescriptions: cb.payload.prescription.map((rx) => ({
          prescriptionId: Number(rx.prescription_id),
          drugName: rx.drug_name,
          strength: rx.strength ?? null,
          quantity: rx.quantity ?? null,
          pharmacyName: rx.pharmacy_name ?? null,
        })),
      };
    case 3:
      return {
        event: 3,
        patientExamId: cb.patientExamId,
        prescriptionId: cb.prescriptionId,
        trackingNumber: cb.payload.tracking_number,
        deliveryService: cb.payload.delivery_service ?? null,
        pharmacyLocation: cb.payload.pharmacy_location ?? null,
        orderId: str(cb.payload.order_id),
      };
  }
}
