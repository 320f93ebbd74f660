// URLs read from input (configuration, requests, answers): parsed without throwing, and only with the
// schemes the caller expects.

/** `text` as a URL with one of `protocols` (e.g. `['http:', 'https:']`), or undefined. */
export function urlWith(protocols: readonly string[], text: string): URL | undefined {
  const url = URL.parse(text);
  return url && protocols.includes(url.protocol) ? url : undefined;
}

/** An absolute http(s) URL: what the gateway may be sent as a link, and what the bot may fetch. */
export function httpUrl(text: string): URL | undefined {
  return urlWith(['http:', 'https:'], text);
}

export function isHttpUrl(text: string): boolean {
  return httpUrl(text) !== undefined;
}
