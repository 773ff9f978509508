// The drills' callback load spreads its callbacks over the journeys within a budget each (a journey sent 100 asks
// for a person: callback_flood), takes journeys added while it runs in turn, and says when every journey had spent
// its budget and one was given more.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CallbackLoad } from '../../scripts/lib/drill-load';

describe('the drills’ callback load', () => {
  let server: Server;
  let url: string;
  let answered = 0;

  beforeAll(async () => {
    server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        answered++;
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ deliveryId: `d-${answered}` }));
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it('gives each journey at most its budget while another has some left, in turn, and counts what went over', async () => {
    const load = new CallbackLoad(
      { apiUrl: url, webhookSecret: 'secret', rate: 500, firstPatientExamId: 1, perJourney: 3 },
      ['a', 'b'],
    );
    expect(load.remaining()).toBe(6);
    await load.run(Number.POSITIVE_INFINITY, () => load.sent.length < 8);
    expect(load.sent.slice(0, 6).map((s) => s.journeyId)).toEqual(['a', 'b', 'a', 'b', 'a', 'b']);
    expect(load.remaining()).toBe(0);
    expect(load.overBudget).toBe(load.sent.length - 6);

    load.addJourneys(['c']);
    expect(load.remaining()).toBe(3);
    const before = load.sent.length;
    await load.run(Number.POSITIVE_INFINITY, () => load.sent.length < before + 3);
    expect(load.sent.slice(before, before + 3).map((s) => s.journeyId)).toEqual(['c', 'c', 'c']);

    expect(await load.drain(10_000)).toBe(0);
    expect(load.sent.every((s) => s.deliveryId?.startsWith('d-'))).toBe(true);
    await load.close();
  });

  it('without a budget takes the journeys in turn for ever', async () => {
    const load = new CallbackLoad({ apiUrl: url, webhookSecret: 'secret', rate: 500, firstPatientExamId: 1 }, [
      'a',
      'b',
      'c',
    ]);
    await load.run(Number.POSITIVE_INFINITY, () => load.sent.length < 9);
    expect(load.sent.slice(0, 9).map((s) => s.journeyId)).toEqual(['a', 'b', 'c', 'a', 'b', 'c', 'a', 'b', 'c']);
    expect(load.overBudget).toBe(0);
    expect(await load.drain(10_000)).toBe(0);
    await load.close();
  });
});
