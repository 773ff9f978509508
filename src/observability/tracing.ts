// OpenTelemetry tracing of a journey's path: API request -> workflow start/signal/update -> workflow -> activities ->
// exam-service call, one trace across the API and worker processes (W3C trace context in the Temporal headers).
// Off unless OTEL_EXPORTER_OTLP_ENDPOINT (or _TRACES_ENDPOINT) or OTEL_TRACES_EXPORTER is set; the OTLP exporter,
// the batch processor, the sampler and the resource read their standard OTEL_* variables themselves.
import { context, propagation, SpanKind, SpanStatusCode, trace, type Span, type Tracer } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { envDetectorSync, Resource } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  ConsoleSpanExporter,
  SimpleSpanProcessor,
  type SpanExporter,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import type { WorkflowClientInterceptor } from '@temporalio/client';
import {
  makeWorkflowExporter,
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
  OpenTelemetryWorkflowClientInterceptor,
} from '@temporalio/interceptors-opentelemetry';
import type { WorkerOptions } from '@temporalio/worker';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

export const API_SERVICE_NAME = 'patient-journey-api';
export const WORKER_SERVICE_NAME = 'patient-journey-worker';

type Env = Record<string, string | undefined>;

export interface Tracing {
  readonly tracer: Tracer;
  readonly resource: Resource;
  readonly spanProcessor: SpanProcessor;
  /** Exports what is still buffered, then stops. */
  shutdown(): Promise<void>;
}

/** Whether the environment asks for traces: an OTLP endpoint, or an exporter named other than `none`. */
export function tracingRequested(env: Env = process.env): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  const exporter = env.OTEL_TRACES_EXPORTER?.trim().toLowerCase();
  if (exporter) return exporter !== 'none';
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

function exporterFrom(env: Env): SpanExporter {
  const name = env.OTEL_TRACES_EXPORTER?.split(',')[0]?.trim().toLowerCase() || 'otlp';
  if (name === 'console') return new ConsoleSpanExporter();
  if (name !== 'otlp') throw new Error(`OTEL_TRACES_EXPORTER: ${name} is not supported here (otlp, console or none)`);
  // Endpoint, headers, timeout and compression from OTEL_EXPORTER_OTLP_* (http/protobuf's JSON sibling).
  return new OTLPTraceExporter();
}

/** The process-wide context manager and W3C propagator the interceptors rely on; set once, the first call wins. */
function installGlobals(): void {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
}

export interface TracingOptions {
  /** Whether tracing is on and which exporter (default process.env); the OTLP exporter reads process.env itself. */
  env?: Env;
  /** Instead of the exporter the environment names (tests pass an InMemorySpanExporter). */
  exporter?: SpanExporter;
}

/**
 * Starts tracing for one service of the engine, or returns undefined when the environment does not ask for it.
 * The first provider started in a process becomes the global one (the exam-service client's spans go there).
 */
export function startTracing(serviceName: string, options: TracingOptions = {}): Tracing | undefined {
  const env = options.env ?? process.env;
  if (!options.exporter && !tracingRequested(env)) return undefined;
  installGlobals();
  // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win over the default name.
  const resource = Resource.default()
    .merge(new Resource({ 'service.name': serviceName }))
    .merge(envDetectorSync.detect());
  const exporter = options.exporter ?? exporterFrom(env);
  // A test's in-memory exporter sees each span as it ends; a real one gets them in batches.
  const spanProcessor = options.exporter ? new SimpleSpanProcessor(exporter) : new BatchSpanProcessor(exporter);
  const provider = new BasicTracerProvider({ resource, spanProcessors: [spanProcessor] });
  trace.setGlobalTracerProvider(provider);
  return {
    tracer: provider.getTracer(serviceName),
    resource,
    spanProcessor,
    shutdown: () => provider.shutdown(),
  };
}

/**
 * The workflow-side interceptors (made in the sandbox, spans out through the `exporter` sink). A pre-built workflow
 * bundle must include it (`bundleWorkflowCode({ workflowInterceptorModules: [...] })`) to trace: a worker ignores
 * `interceptors.workflowModules` when given a bundle.
 */
export const WORKFLOW_TRACING_MODULE =
  require.resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors');

/** Client interceptors: starting, signalling and updating a workflow carry the caller's trace context. */
export function tracingClientInterceptors(tracing: Tracing | undefined): WorkflowClientInterceptor[] {
  return tracing ? [new OpenTelemetryWorkflowClientInterceptor({ tracer: tracing.tracer })] : [];
}

/**
 * Worker options that trace workflows (RunWorkflow, StartActivity spans made in the sandbox and exported through
 * the `exporter` sink) and activities (RunActivity spans, the parent of the exam-service calls).
 */
export function tracingWorkerOptions(tracing: Tracing | undefined): Pick<WorkerOptions, 'interceptors' | 'sinks'> {
  if (!tracing) return {};
  const options = { tracer: tracing.tracer };
  return {
    interceptors: {
      workflowModules: [WORKFLOW_TRACING_MODULE],
      activity: [
        (ctx) => ({
          inbound: new OpenTelemetryActivityInboundInterceptor(ctx, options),
          outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
        }),
      ],
    },
    sinks: { exporter: makeWorkflowExporter(tracing.spanProcessor, tracing.resource) },
  };
}

const requestSpans = new WeakMap<FastifyRequest, Span>();

/**
 * A server span per API request, named by method and route template, with the status code: never the URL itself
 * (it carries webhook tokens), never a header or a body. A caller's traceparent becomes its parent.
 */
export function traceRequests(app: FastifyInstance, tracer: Tracer): void {
  const active = (request: FastifyRequest) => {
    const span = requestSpans.get(request);
    return span ? trace.setSpan(context.active(), span) : context.active();
  };
  app.addHook('onRequest', (request, _reply, done) => {
    const route = request.routeOptions.url ?? 'unmatched';
    const parent = propagation.extract(context.active(), request.headers);
    const span = tracer.startSpan(
      `${request.method} ${route}`,
      { kind: SpanKind.SERVER, attributes: { 'http.request.method': request.method, 'http.route': route } },
      parent,
    );
    requestSpans.set(request, span);
    context.with(trace.setSpan(parent, span), done);
  });
  // A body that arrives in later chunks is read in the socket's async context: enter the span again for the handler.
  app.addHook('preHandler', (request, _reply, done) => context.with(active(request), done));
  const end = (request: FastifyRequest, reply: FastifyReply) => {
    const span = requestSpans.get(request);
    if (!span) return;
    requestSpans.delete(request);
    span.setAttribute('http.response.status_code', reply.statusCode);
    if (reply.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
  };
  app.addHook('onResponse', (request, reply, done) => {
    end(request, reply);
    done();
  });
  // A request whose client went away gets no onResponse.
  app.addHook('onRequestAbort', (request, done) => {
    const span = requestSpans.get(request);
    span?.setStatus({ code: SpanStatusCode.ERROR, message: 'request aborted' });
    span?.end();
    requestSpans.delete(request);
    done();
  });
}
