import { describe, expect, it } from 'vitest';
import type { VoiceCaller, VoiceVideoRequests } from '../../src/ports/voice-video.ts';
import { parseToolCall, runToolCall, VOICE_TOOLS } from '../../src/voice/tools.ts';

/** Ana, alone in her turn, with no roles. */
const caller: VoiceCaller = {
  guildId: 'g',
  channelId: 'c',
  userId: 'u',
  displayName: 'Ana',
  roleIds: [],
  isServerManager: false,
  alsoHeard: [],
};

// The arguments the model sends are untrusted: each problem becomes an output naming it, never a throw.
describe('voice tool arguments', () => {
  it("declares generate_video and video_status with the contract's argument names", () => {
    expect(VOICE_TOOLS.map((tool) => tool.name)).toEqual(['generate_video', 'video_status']);
    expect(Object.keys((VOICE_TOOLS[0]!.parameters as { properties: object }).properties)).toEqual([
      'prompt',
      'duration',
      'aspect_ratio',
      'resolution',
      'variants',
    ]);
  });

  it('accepts a prompt with optional duration, aspect_ratio and resolution', () => {
    expect(parseToolCall('generate_video', '{"prompt":" a fox surfing ","duration":6,"aspect_ratio":"16:9","resolution":"720p"}')).toEqual({
      ok: true,
      call: { name: 'generate_video', request: { prompt: 'a fox surfing', duration: 6, aspectRatio: '16:9', resolution: '720p' } },
    });
    expect(parseToolCall('video_status', '')).toEqual({ ok: true, call: { name: 'video_status', taskRef: undefined } });
    expect(parseToolCall('video_status', '{"task":"abc123"}')).toEqual({ ok: true, call: { name: 'video_status', taskRef: 'abc123' } });
  });

  it.each([
    ['generate_video', '{"prompt":', /not valid JSON/],
    ['generate_video', '[1,2]', /must be a JSON object/],
    ['generate_video', '{}', /^prompt is required/],
    ['generate_video', '{"prompt":"   "}', /^prompt is required/],
    ['generate_video', `{"prompt":"${'a'.repeat(4001)}"}`, /^prompt can be at most 4000 characters/],
    ['generate_video', '{"prompt":"x","duration":"long"}', /^duration must be a whole number of seconds from 1 to 15/],
    ['generate_video', '{"prompt":"x","duration":2.5}', /^duration must be a whole number/],
    ['generate_video', '{"prompt":"x","duration":99}', /^duration must be a whole number/],
    ['generate_video', '{"prompt":"x","aspect_ratio":"5:1"}', /^aspect_ratio must be one of 1:1, 16:9/],
    ['generate_video', '{"prompt":"x","resolution":"4k"}', /^resolution must be one of 480p, 720p, 1080p/],
    ['generate_video', '{"prompt":"x","seed":4}', /^generate_video has no argument "seed"/],
    ['video_status', '{"task":5}', /^task must be a task ref/],
    ['video_status', '{"id":"x"}', /^video_status has no argument "id"/],
    ['delete_everything', '{}', /^There is no function "delete_everything"\. The functions are generate_video and video_status\./],
  ])('%s with %s: refused, naming the problem', (name, args, message) => {
    const parsed = parseToolCall(name, args);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.message).toMatch(message);
  });

  it('runs a good call as the caller and gives the model the outcome; a bad one reaches nothing', async () => {
    const calls: string[] = [];
    const requests: VoiceVideoRequests = {
      generate: (caller, request) => {
        calls.push(`${caller.userId}:${request.prompt}`);
        return Promise.resolve({ status: 'submitted', message: 'The video is being made: task abc.', task: 'abc' });
      },
      status: () => Promise.resolve({ status: 'not_found', message: 'none' }),
    };
    expect(JSON.parse(await runToolCall(requests, caller, 'generate_video', '{"prompt":"a fox"}'))).toEqual({
      status: 'submitted',
      message: 'The video is being made: task abc.',
      task: 'abc',
    });
    expect(JSON.parse(await runToolCall(requests, caller, 'nope', '{}'))).toMatchObject({ status: 'invalid_arguments' });
    expect(JSON.parse(await runToolCall(requests, undefined, 'generate_video', '{"prompt":"a fox"}'))).toMatchObject({
      status: 'not_done',
    });
    expect(calls).toEqual(['u:a fox']);
  });

  it('tells the model a video that waits for the key is queued, with its place in line', async () => {
    const queued = {
      status: 'queued',
      message: "The video is queued, 2nd in line for this server's key, for about $0.10: task abc.",
      task: 'abc',
      place: 2,
    } as const;
    const requests: VoiceVideoRequests = {
      generate: () => Promise.resolve(queued),
      status: () => Promise.resolve({ status: 'not_found', message: 'none' }),
    };
    expect(JSON.parse(await runToolCall(requests, caller, 'generate_video', '{"prompt":"a fox"}'))).toEqual(queued);
    // The tool says so, so the model knows to tell the member where the video stands.
    expect(VOICE_TOOLS[0]?.description).toContain('queued: tell them its place in line');
  });
});
