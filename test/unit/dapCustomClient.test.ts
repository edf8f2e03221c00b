import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import type { InjectedResultsResponse, SamplesEventBody } from '../../common/dapCustom';
import { CustomEvents, CustomRequests } from '../../common/dapCustom';
import { customEventBody, customRequest } from '../../common/dapCustomClient';
import { CycleLensDebugSession } from '../../adapter/session/debugSession';
import { DapClient } from '../../core/dap/dapClient';
import { RecordingDebugSession } from '../doubles/recordingDebugSession';

// The one client of CycleLens's custom requests. Against a stand-in for vscode.DebugSession it must
// send the contract's wire name and the arguments untouched; against the real adapter (in process,
// over DAP framing) it must give back the adapter's body or its error message.

describe('customRequest against a VS Code debug session double', () => {
  it('sends the wire name and the arguments as given, and resolves with the body', async () => {
    const body: InjectedResultsResponse = { results: [], elapsed: 42 };
    const session = new RecordingDebugSession({
      [CustomRequests.injectedResults]: body,
      [CustomRequests.removeInjections]: undefined,
    });
    assert.deepEqual(await customRequest(session, CustomRequests.injectedResults), body);
    const args = { ids: [3, 5] };
    assert.equal(await customRequest(session, CustomRequests.removeInjections, args), undefined);
    assert.deepEqual(session.requests, [
      { command: 'cyclelens/injectedResults', args: undefined, argsGiven: false },
      { command: 'cyclelens/removeInjections', args: { ids: [3, 5] }, argsGiven: true },
    ]);
    assert.equal(session.requests[1]!.args, args, 'the arguments object itself, not a copy');
  });

  it('lets requests whose arguments are all optional go without them', async () => {
    const session = new RecordingDebugSession({ [CustomRequests.run]: { reached: true } });
    assert.deepEqual(await customRequest(session, CustomRequests.run), { reached: true });
    assert.deepEqual(session.requests, [{ command: 'cyclelens/run', args: undefined, argsGiven: false }]);
  });

  it("rejects with the session's error", async () => {
    const session = new RecordingDebugSession({ [CustomRequests.counters]: new Error('No target is connected yet.') });
    await assert.rejects(customRequest(session, CustomRequests.counters), /No target is connected yet\./);
  });
});

describe('customEventBody', () => {
  const samples: SamplesEventBody = {
    sampler: 'qemu-monitor',
    seq: 1,
    elapsedMs: 250,
    delta: [[0x100, 3]],
    locations: [],
    totalSamples: 3,
    samplesPerSecond: 12,
  };

  it('gives the body of the event it names', () => {
    assert.deepEqual(customEventBody({ event: CustomEvents.samples, body: samples }, CustomEvents.samples), samples);
  });

  it('gives nothing for another event', () => {
    assert.equal(
      customEventBody({ event: CustomEvents.capabilities, body: { family: 'riscv', units: [] } }, CustomEvents.samples),
      undefined,
    );
    assert.equal(
      customEventBody({ event: 'stopped', body: { reason: 'breakpoint' } }, CustomEvents.capabilities),
      undefined,
    );
  });
});

describe('customRequest against the adapter in process', () => {
  const toAdapter = new PassThrough();
  const fromAdapter = new PassThrough();
  const adapter = new CycleLensDebugSession();
  const client = new DapClient(fromAdapter, toAdapter, 10_000);

  before(() => {
    // As the adapter runs under `--server`: ending the session never exits the process.
    adapter.setRunAsServer(true);
    adapter.start(toAdapter, fromAdapter);
  });

  after(() => {
    client.close(new Error('test over'));
    adapter.dispose();
    toAdapter.end();
    fromAdapter.end();
  });

  it("resolves with the adapter's body: no measurement injected yet", async () => {
    const r = await customRequest(client, CustomRequests.injectedResults);
    assert.deepEqual(r, { results: [] });
  });

  it('resolves a request without a response body to undefined', async () => {
    assert.equal(await customRequest(client, CustomRequests.removeInjections, {}), undefined);
  });

  it("rejects with the adapter's message when the request cannot be served", async () => {
    await assert.rejects(customRequest(client, CustomRequests.counters), /No target is connected yet/);
    await assert.rejects(
      customRequest(client, CustomRequests.inject, { targets: [{ function: 'main' }] }),
      /No target is connected yet/,
    );
  });
});
