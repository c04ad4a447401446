// Errors of the HTTP client: one class per status, carrying the RFC 9457 problem.

import type { EventError, Problem, PublishResult } from "./types.js";

/** An error answer of agentmem's HTTP API. `status`, `field` and `detail` come from its problem. */
export class AgentmemError extends Error {
  readonly status: number;
  readonly field: string | undefined;
  readonly detail: string;
  /** The offending event of a batch. */
  readonly index: number | undefined;
  /** Every invalid event of a batch. */
  readonly errors: EventError[];
  /** For a batch that failed part way: the events stored before `index`. */
  readonly results: PublishResult[];
  /** Seconds from a Retry-After header (429, 503). */
  readonly retryAfter: number | undefined;
  readonly problem: Problem;

  constructor(problem: Problem, retryAfter?: number) {
    // The gateway's detail may already start with the field ("after: turn …"): once is enough.
    const where = problem.field && !problem.detail?.startsWith(`${problem.field}:`) ? `${problem.field}: ` : "";
    super(`agentmem: ${problem.status} ${problem.title}: ${where}${problem.detail ?? ""}`.trimEnd());
    this.name = new.target.name;
    this.status = problem.status;
    this.field = problem.field;
    this.detail = problem.detail ?? problem.title;
    this.index = problem.index;
    this.errors = problem.errors ?? [];
    this.results = problem.results ?? [];
    this.retryAfter = retryAfter;
    this.problem = problem;
  }
}

/** 400: invalid input; `field` says which. */
export class BadRequestError extends AgentmemError {}
/** 400 on `after`: ingest rejected that turn, it will never be applied; `detail` says why. */
export class TurnRejectedError extends BadRequestError {}
/** 401: no or unknown bearer token. */
export class AuthenticationError extends AgentmemError {}
/** 403: a token of another tenant. */
export class PermissionDeniedError extends AgentmemError {}
/** 404: no such session, event or fact. */
export class NotFoundError extends AgentmemError {}
/** 413: the body or event is too large. */
export class PayloadTooLargeError extends AgentmemError {}
/** 429: the tenant is over its rate (tried again, after Retry-After, for up to retryMs before thrown). */
export class RateLimitError extends AgentmemError {}
/** 500: the service failed. */
export class ServerError extends AgentmemError {}
/**
 * 503: NATS, JetStream or the service is not there (tried again for up to retryMs before
 * thrown); or, with `field` "after", the turn `after` was not applied within `wait_ms` (thrown at
 * once: the service waited that long already).
 */
export class ServiceUnavailableError extends AgentmemError {}
/** 504: NATS did not answer in time (tried again for up to retryMs before thrown). */
export class GatewayTimeoutError extends AgentmemError {}
/** No answer from the HTTP API at all (connection refused, timeout), after trying for up to retryMs. */
export class AgentmemConnectionError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "AgentmemConnectionError";
  }
}

/** errorFor returns the error class for a problem's status. */
export function errorFor(problem: Problem, retryAfter?: number): AgentmemError {
  switch (problem.status) {
    case 400:
      return problem.field === "after" ? new TurnRejectedError(problem) : new BadRequestError(problem);
    case 401:
      return new AuthenticationError(problem);
    case 403:
      return new PermissionDeniedError(problem);
    case 404:
      return new NotFoundError(problem);
    case 413:
      return new PayloadTooLargeError(problem);
    case 429:
      return new RateLimitError(problem, retryAfter);
    case 500:
      return new ServerError(problem);
    case 503:
      return new ServiceUnavailableError(problem, retryAfter);
    case 504:
      return new GatewayTimeoutError(problem);
    default:
      return new AgentmemError(problem, retryAfter);
  }
}

/** A wait (waitForFact) that ran out of time. */
export class AgentmemTimeoutError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "AgentmemTimeoutError";
  }
}
