import { expect } from 'chai';
import { readTracingConfig, TracingConfigInvalid, unusedTracingVariables } from '../../src/tracing/config.js';

const ENDPOINT = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' };

function problemsOf(env: Record<string, string>): readonly string[] {
  try {
    readTracingConfig(env);
  } catch (err: unknown) {
    if (err instanceof TracingConfigInvalid) return err.problems;
    throw err;
  }
  throw new Error('expected TracingConfigInvalid');
}

describe('tracing config (the standard OTEL_ variables)', function () {
  it('is off without an endpoint, whatever else is set, and names what is unused', function () {
    const env = { OTEL_SERVICE_NAME: 'gw', OTEL_TRACES_SAMPLER: 'always_on', PATH: '/bin' };
    expect(readTracingConfig(env)).to.equal(undefined);
    expect(unusedTracingVariables(env)).to.deep.equal(['OTEL_SERVICE_NAME', 'OTEL_TRACES_SAMPLER']);
    expect(unusedTracingVariables({ ...env, ...ENDPOINT })).to.deep.equal([]);
  });

  it('is off with OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none, endpoint or not', function () {
    expect(readTracingConfig({ ...ENDPOINT, OTEL_SDK_DISABLED: 'true' })).to.equal(undefined);
    expect(readTracingConfig({ ...ENDPOINT, OTEL_TRACES_EXPORTER: 'none' })).to.equal(undefined);
  });

  it('defaults to http/protobuf, parent-based always-on, service svc', function () {
    expect(readTracingConfig(ENDPOINT)).to.deep.equal({ protocol: 'http/protobuf', sampler: { kind: 'always_on' }, parentBased: true, serviceName: 'svc', scheduleDelayMs: 5000, maxExportBatchSize: 2048, maxQueueSize: 8192 });
  });

  it('reads the traces endpoint, protocol, sampler, ratio, service name and batch delay', function () {
    expect(readTracingConfig({
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://collector/v1/traces', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
      OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.25', OTEL_SERVICE_NAME: 'gateway', OTEL_BSP_SCHEDULE_DELAY: '100',
    })).to.deep.equal({ protocol: 'http/json', sampler: { kind: 'traceidratio', ratio: 0.25 }, parentBased: false, serviceName: 'gateway', scheduleDelayMs: 100, maxExportBatchSize: 2048, maxQueueSize: 8192 });
    expect(readTracingConfig({ ...ENDPOINT, OTEL_TRACES_SAMPLER: 'parentbased_always_off' })).to.include({ parentBased: true }).and.deep.include({ sampler: { kind: 'always_off' } });
  });

  it('names every bad value at once, never the endpoint itself (it may hold credentials)', function () {
    const problems = problemsOf({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'ftp://user:hunter22@collector', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_TRACES_SAMPLER: 'jaeger_remote',
      OTEL_TRACES_SAMPLER_ARG: '1.5', OTEL_TRACES_EXPORTER: 'zipkin', OTEL_BSP_SCHEDULE_DELAY: 'soon',
    });
    expect(problems).to.deep.equal([
      "OTEL_TRACES_EXPORTER: 'zipkin' is not supported; svc exports with 'otlp' (or 'none' for no traces)",
      'OTEL_EXPORTER_OTLP_ENDPOINT: not an http:// or https:// URL',
      "OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' is not supported; give http/protobuf (the default) or http/json",
      "OTEL_TRACES_SAMPLER: 'jaeger_remote' is not one of always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio",
      "OTEL_TRACES_SAMPLER_ARG: '1.5' is not a ratio from 0 to 1",
      "OTEL_BSP_SCHEDULE_DELAY: 'soon' is not a whole number of milliseconds from 1",
    ]);
    expect(problems.join(' ')).to.not.contain('hunter22');
  });

  it('reads the batch size and queue bound, a batch no larger than the queue', function () {
    expect(readTracingConfig({ ...ENDPOINT, OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '512', OTEL_BSP_MAX_QUEUE_SIZE: '2048' })).to.include({ maxExportBatchSize: 512, maxQueueSize: 2048 });
    expect(readTracingConfig({ ...ENDPOINT, OTEL_BSP_MAX_QUEUE_SIZE: '1000' }), 'the default batch shrinks to a smaller queue').to.include({ maxExportBatchSize: 1000, maxQueueSize: 1000 });
    expect(problemsOf({ ...ENDPOINT, OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '4096', OTEL_BSP_MAX_QUEUE_SIZE: '2048' })).to.deep.equal([
      'OTEL_BSP_MAX_EXPORT_BATCH_SIZE: 4096 is more than OTEL_BSP_MAX_QUEUE_SIZE (2048); a batch is taken from the queue',
    ]);
    expect(problemsOf({ ...ENDPOINT, OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '0', OTEL_BSP_MAX_QUEUE_SIZE: 'lots' })).to.deep.equal([
      "OTEL_BSP_MAX_QUEUE_SIZE: 'lots' is not a whole number of spans from 1 to 1000000",
      "OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '0' is not a whole number of spans from 1 to 1000000",
    ]);
  });

  it('refuses a ratio that is not a plain number', function () {
    for (const arg of ['-0.1', 'NaN', '1e-1', '']) {
      if (arg === '') expect(readTracingConfig({ ...ENDPOINT, OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: arg })).to.deep.include({ sampler: { kind: 'traceidratio', ratio: 1 } });
      else expect(problemsOf({ ...ENDPOINT, OTEL_TRACES_SAMPLER_ARG: arg }), arg).to.have.length(1);
    }
  });
});
