// The exam service's catalog, passed through for the clinic in one camelCase layout: exams, partner pharmacies and
// their treatment packages, and the custom pharmacy search (either form; results ready for scenario.pharmacy).
import type { FastifyPluginCallbackZod } from 'fastify-type-provider-zod';
import { requireClinic } from '../../auth';
import type { ApiContext } from '../../context';
import { notFound, problemResponses, validationProblem } from '../../problem';
import {
  CatalogExams,
  CustomPharmacies,
  PartnerPharmacies,
  PharmacyParams,
  PharmacySearchQuery,
  TreatmentPackages,
  TreatmentPackagesQuery,
} from '../../schemas';
import { rulesOf } from '../../../contract/request-rules';
import {
  packagePriceCents,
  searchResultPharmacies,
  type CustomPharmacySearchInput,
} from '../../../exam-service/schemas';

const problems = problemResponses([400, 401, 422, 429, 502, 503]);
const meta = { tags: ['catalog'], security: [{ bearerAuth: [] }] };

const catalog: FastifyPluginCallbackZod = (app, _options, done) => {
  const ctx: ApiContext = app;
  app.get(
    '/catalog/exams',
    { schema: { ...meta, summary: "The clinic's exams", response: { 200: CatalogExams, ...problems } } },
    async (request) => {
      const exams = await ctx.examService.exams(requireClinic(request));
      return {
        exams: exams.map((e) => ({
          examId: e.id,
          title: e.title,
          rxType: e.rx_type,
          price: e.price,
          attachmentsRequired: e.attachments_required,
          attachments: e.attachments,
        })),
      };
    },
  );

  app.get(
    '/catalog/partner-pharmacies',
    {
      schema: {
        ...meta,
        summary: 'Partner (compounding) pharmacies',
        response: { 200: PartnerPharmacies, ...problems },
      },
    },
    async (request) => {
      const clinic = requireClinic(request);
      const r = await ctx.examService.call(() => ctx.examService.client(clinic).partnerPharmacyList());
      return {
        pharmacies: r.pharmacies.map((p) => ({
          pharmacyId: p.pharmacy_id,
          name: p.name,
          ...(p.type ? { type: p.type } : {}),
        })),
      };
    },
  );

  app.get(
    '/catalog/partner-pharmacies/:pharmacyId/treatment-packages',
    {
      schema: {
        ...meta,
        summary: "A partner pharmacy's treatment packages for an exam",
        description:
          "404 for a pharmacy that is not one of the partner pharmacies; 400 (rule `exam-in-list`) for an exam not in the clinic's exam list.",
        params: PharmacyParams,
        querystring: TreatmentPackagesQuery,
        response: {
          200: TreatmentPackages,
          ...problemResponses([400, 401, 404, 414, 422, 429, 502, 503], {
            404: 'No partner pharmacy with this id (`not-found`)',
          }),
        },
        'x-rules': rulesOf('exam-in-list'),
      },
    },
    async (request) => {
      const clinic = requireClinic(request);
      const { pharmacyId } = request.params;
      const { examId } = request.query;
      const exams = await ctx.examService.exams(clinic);
      if (!exams.some((e) => e.id === examId)) {
        throw validationProblem([
          {
            field: 'querystring.examId',
            message: `exam ${examId} is not in the clinic's exam list`,
            rule: 'exam-in-list',
          },
        ]);
      }
      const partners = await ctx.examService.call(() => ctx.examService.client(clinic).partnerPharmacyList());
      if (!partners.pharmacies.some((p) => p.pharmacy_id === pharmacyId)) throw notFound('partner pharmacy');
      const r = await ctx.examService.call(() =>
        ctx.examService.client(clinic).treatmentPackages({
          pharmacy_id: pharmacyId,
          exam_id: examId,
          ...(request.query.state !== undefined ? { patient_state: request.query.state } : {}),
        }),
      );
      const text = (v: string | null | undefined) => (typeof v === 'string' && v !== '' ? v : undefined);
      return {
        treatmentPackages: r.treatment_packages.map((p) => {
          const described = {
            title: text(p.title),
            drugName: text(p.drug_name),
            strength: text(p.strength),
            size: text(p.size),
            durationDays: p.duration_days ?? undefined,
          };
          return {
            orderSetId: p.order_set_id ?? null,
            examPosId: p.exam_pos_id ?? null,
            ...Object.fromEntries(Object.entries(described).filter(([, v]) => v !== undefined)),
            priceCents: packagePriceCents(p),
          };
        }),
      };
    },
  );

  app.get(
    '/catalog/pharmacies/search',
    {
      schema: {
        ...meta,
        summary: 'Search any U.S. pharmacy (for urgent care and choose-your-own pharmacy journeys)',
        description:
          'Form A: search (name fragment), zipCode, ncpdpid. Form B: city, state, zipCode, pharmacyName. Any of city, state or pharmacyName selects form B.',
        querystring: PharmacySearchQuery,
        response: { 200: CustomPharmacies, ...problems },
      },
    },
    async (request) => {
      const clinic = requireClinic(request);
      const q = request.query;
      const formB = q.city !== undefined || q.state !== undefined || q.pharmacyName !== undefined;
      const input: CustomPharmacySearchInput = formB
        ? {
            ...(q.city !== undefined ? { city: q.city } : {}),
            ...(q.state !== undefined ? { state: q.state } : {}),
            ...(q.zipCode !== undefined ? { zip_code: q.zipCode } : {}),
            ...(q.pharmacyName !== undefined ? { pharmacy_name: q.pharmacyName } : {}),
          }
        : {
            ...(q.search !== undefined ? { search: q.search } : {}),
            ...(q.zipCode !== undefined ? { zip_code: q.zipCode } : {}),
            ...(q.ncpdpid !== undefined ? { ncpdpid: q.ncpdpid } : {}),
          };
      const r = await ctx.examService.call(() => ctx.examService.client(clinic).customPharmacySearch(input));
      return {
        pharmacies: searchResultPharmacies(r).map((p) => ({
          ncpdpid: p.ncpdpid,
          name: p.pharmacy_name,
          ...(p.pharmacy_address_line_1 ? { addressLine1: p.pharmacy_address_line_1 } : {}),
          ...(p.pharmacy_address_line_2 ? { addressLine2: p.pharmacy_address_line_2 } : {}),
          ...(p.pharmacy_city ? { city: p.pharmacy_city } : {}),
          ...(p.pharmacy_state ? { state: p.pharmacy_state } : {}),
          ...(p.pharmacy_zip_code ? { zipCode: p.pharmacy_zip_code } : {}),
          ...(p.pharmacy_phone ? { phone: p.pharmacy_phone } : {}),
          ...(p.pharmacy_type ? { type: p.pharmacy_type } : {}),
        })),
      };
    },
  );
  done();
};
export default catalog;
