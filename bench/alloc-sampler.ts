// Preloaded (node --import tsx --import ./bench/alloc-sampler.ts) by bench/proxy-alloc.sh: on SIGUSR2, samples every allocation for
// ALLOC_SAMPLE_MS (V8's sampling heap profiler, keeping the objects young and full collections
// free, so it sees short-lived garbage, not only what survives), then writes the profile to
// $ALLOC_PROFILE_DIR/alloc-<pid>.json.
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';

const session = new Session();
session.connect();
const sampleMs = Number(process.env['ALLOC_SAMPLE_MS'] ?? 4000);
const dir = process.env['ALLOC_PROFILE_DIR'] ?? '/tmp';

process.on('SIGUSR2', () => {
  const options = { samplingInterval: 512, includeObjectsCollectedByMinorGC: true, includeObjectsCollectedByMajorGC: true };
  session.post('HeapProfiler.enable', () =>
    session.post('HeapProfiler.startSampling', options, () =>
      setTimeout(() => {
        session.post('HeapProfiler.stopSampling', (err, result) => {
          if (err !== null) process.stderr.write(`alloc-sampler: ${err.message}\n`);
          else writeFileSync(`${dir}/alloc-${process.pid}.json`, JSON.stringify(result.profile));
        });
      }, sampleMs),
    ),
  );
});
