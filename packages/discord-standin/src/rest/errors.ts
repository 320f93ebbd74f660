// A refusal as Discord words it: an HTTP status, a JSON error code and message, and field errors.

export class RestError extends Error {
  readonly status: number;
  readonly code: number;
  readonly errors: Record<string, unknown> | undefined;
  constructor(status: number, code: number, message: string, errors?: Record<string, unknown>) {
    super(message);
    this.status = status;
    this.code = code;
    this.errors = errors;
  }
}
