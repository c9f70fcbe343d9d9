/** An error that is answered with its own HTTP status and message (the node API's handlers throw it). */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}
