export interface GlobalOptions {
  socket: string;
}
