/**
 * The resource of svc's spans, the same in the event loop's tracer provider and in the export
 * thread that sends them (a thread has the process's pid and a copy of its environment).
 * OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (envDetector) win over the defaults here.
 */
import { detectResources, envDetector, resourceFromAttributes, type Resource } from '@opentelemetry/resources';

export function svcResource(serviceName: string, version: string): Resource {
  return resourceFromAttributes({ 'service.name': serviceName, 'service.version': version, 'process.pid': process.pid }).merge(detectResources({ detectors: [envDetector] }));
}
