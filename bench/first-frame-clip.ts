import { readFile, writeFile } from 'node:fs/promises';
import createFFmpegCore from '@ffmpeg/core';

// Makes the first-frame benchmark's 1 s 1080p High-profile H.264 clip at the path given (bench/first-frame.ts
// runs it): ffmpeg.wasm's libx264 from its `testsrc2` pattern, a few seconds, offline. A process of its
// own, so that the benchmark's process, which stands for the bot's, never holds a core.

const path = process.argv[2];
if (path === undefined) throw new Error('usage: first-frame-clip.ts <path of the mp4 to write>');
Object.defineProperty(globalThis, 'self', { value: { location: { href: import.meta.url } }, configurable: true });
const wasmBinary = await readFile(new URL(import.meta.resolve('@ffmpeg/core/wasm')));
const core = await createFFmpegCore({ wasmBinary });
const code = core.exec(
  ...['-v', 'error', '-f', 'lavfi', '-i', 'testsrc2=size=1920x1080:rate=24', '-t', '1'],
  ...['-c:v', 'libx264', '-profile:v', 'high', '-preset', 'veryfast', '-pix_fmt', 'yuv420p', '/clip.mp4'],
);
if (code !== 0) throw new Error(`ffmpeg.wasm could not make the 1080p clip (exit ${code})`);
await writeFile(path, core.FS.readFile('/clip.mp4'));
