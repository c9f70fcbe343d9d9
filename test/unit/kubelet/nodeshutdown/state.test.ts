import { expect } from 'chai';
import { decodeShutdownState, encodeShutdownState } from '../../../../src/kubelet/nodeshutdown/state.js';

describe('nodeshutdown/state (graceful_node_shutdown_state)', () => {
  const start = Date.parse('2026-12-07T06:00:00.250Z');
  const end = Date.parse('2026-12-07T06:00:31Z');

  it("writes Go's JSON of two times, the zero time for one not set", () => {
    expect(JSON.parse(encodeShutdownState({ startMs: start }))).to.deep.equal({
      startTime: '2026-12-07T06:00:00.250Z',
      endTime: '0001-01-01T00:00:00Z',
    });
    expect(decodeShutdownState(encodeShutdownState({ startMs: start, endMs: end }))).to.deep.equal({
      startMs: start,
      endMs: end,
    });
  });

  const cases: [string, string, unknown][] = [
    [
      "a Go kubelet's file (nanoseconds, an offset)",
      '{"startTime":"2026-12-07T07:00:00.250000001+01:00","endTime":"2026-12-07T06:00:31Z"}',
      { startMs: start, endMs: end },
    ],
    ['zero times are absent', '{"startTime":"0001-01-01T00:00:00Z","endTime":"0001-01-01T00:00:00Z"}', {}],
    ['missing fields are absent', '{}', {}],
  ];
  for (const [name, text, want] of cases)
    it(name, () => expect(decodeShutdownState(text)).to.deep.equal(want));

  const bad: [string, string, RegExp][] = [
    ['not JSON', '{"startTime": 7', /JSON/],
    ['not an object', '[1]', /not a JSON object/],
    ['a number for a time', '{"startTime": 7}', /startTime: not a time: 7/],
    ['an unparsable time', '{"endTime": "yesterday"}', /endTime: not a time: "yesterday"/],
  ];
  for (const [name, text, err] of bad)
    it(`refuses ${name}`, () => expect(() => decodeShutdownState(text)).to.throw(err));
});
