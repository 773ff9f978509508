// One HTTP request naming the `Host` a test gives (fetch will not set it): what a page under another name sends.
import http from 'node:http';

export interface HostAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** One request to 127.0.0.1 at `port` with the `Host` given. */
export function hostRequest(
  port: number,
  o: { host: string; method?: string; path?: string; headers?: Record<string, string>; body?: string },
): Promise<HostAnswer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method: o.method ?? 'GET',
        path: o.path ?? '/',
        headers: { ...o.headers, host: o.host },
        agent: false,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.end(o.body);
  });
}
