/** Refusals with an HTTP status each; the API's one error handler turns them into {ok:false, error}. */
export class AppError extends Error {
  readonly status: number = 500;
  readonly headers: Record<string, string> = {};
  constructor(message: string, headers?: Record<string, string>) {
    super(message);
    this.name = new.target.name;
    if (headers) this.headers = headers;
  }
}

export class BadRequest extends AppError {
  override readonly status = 400;
}
export class Unauthorized extends AppError {
  override readonly status = 401;
}
export class Forbidden extends AppError {
  override readonly status = 403;
}
export class NotFound extends AppError {
  override readonly status = 404;
}
export class MethodNotAllowed extends AppError {
  override readonly status = 405;
}
export class Conflict extends AppError {
  override readonly status = 409;
}
export class PayloadTooLarge extends AppError {
  override readonly status = 413;
}
export class UnsupportedMediaType extends AppError {
  override readonly status = 415;
}
export class Unprocessable extends AppError {
  override readonly status = 422;
}
export class LimitReached extends AppError {
  override readonly status = 429;
  constructor(message: string, retryAfterSeconds: number, headers: Record<string, string> = {}) {
    super(message, { ...headers, 'Retry-After': String(Math.max(1, Math.ceil(retryAfterSeconds))) });
  }
}
export class ServiceUnavailable extends AppError {
  override readonly status = 503;
}
