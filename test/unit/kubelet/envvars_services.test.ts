import { expect } from 'chai';
import type { Container, Pod } from '../../../src/api/core.js';
import { isServiceIPSet, type Service, type ServicePort } from '../../../src/api/service.js';
import { makeEnvironmentVariables } from '../../../src/kubelet/envvars.js';
import {
  fromServices,
  getServiceEnvVarMap,
  makeEnvVariableName,
} from '../../../src/kubelet/envvars_services.js';

function svc(name: string, namespace: string, clusterIP: string, port: number, protocol = 'TCP'): Service {
  return {
    metadata: { name, namespace },
    spec: { clusterIP, ports: [{ port, protocol: protocol as ServicePort['protocol'] }] },
  };
}

/** The service set of upstream's TestMakeEnvironmentVariables. */
const services: Service[] = [
  svc('kubernetes', 'default', '1.2.3.1', 8081),
  svc('test', 'test1', '1.2.3.3', 8083),
  svc('kubernetes', 'test2', '1.2.3.4', 8084),
  svc('test', 'test2', '1.2.3.5', 8085),
  svc('test', 'test2', 'None', 8085),
  svc('test', 'test2', '', 8085),
  svc('not-special', 'default', '1.2.3.8', 8088),
  svc('not-special', 'default', 'None', 8088),
  svc('not-special', 'default', '', 8088),
];

function linkVars(prefix: string, ip: string, port: number): Record<string, string> {
  return {
    [`${prefix}_SERVICE_HOST`]: ip,
    [`${prefix}_SERVICE_PORT`]: String(port),
    [`${prefix}_PORT`]: `tcp://${ip}:${port}`,
    [`${prefix}_PORT_${port}_TCP`]: `tcp://${ip}:${port}`,
    [`${prefix}_PORT_${port}_TCP_PROTO`]: 'tcp',
    [`${prefix}_PORT_${port}_TCP_PORT`]: String(port),
    [`${prefix}_PORT_${port}_TCP_ADDR`]: ip,
  };
}

describe('service links: which services', () => {
  it('without service links: only the master service of default', () => {
    expect(getServiceEnvVarMap(services, 'test1', false)).to.deep.equal(
      linkVars('KUBERNETES', '1.2.3.1', 8081),
    );
  });

  it("with service links: the pod's namespace too; enableServiceLinks unset means true", () => {
    const expected = { ...linkVars('TEST', '1.2.3.3', 8083), ...linkVars('KUBERNETES', '1.2.3.1', 8081) };
    expect(getServiceEnvVarMap(services, 'test1', true)).to.deep.equal(expected);
    expect(getServiceEnvVarMap(services, 'test1', undefined)).to.deep.equal(expected);
  });

  it("a `kubernetes` service in the pod's namespace wins only with service links on, in any list order", () => {
    expect(getServiceEnvVarMap(services, 'test2', false)).to.deep.equal(
      linkVars('KUBERNETES', '1.2.3.1', 8081),
    );
    const expected = { ...linkVars('TEST', '1.2.3.5', 8085), ...linkVars('KUBERNETES', '1.2.3.4', 8084) };
    expect(getServiceEnvVarMap(services, 'test2', true)).to.deep.equal(expected);
    expect(getServiceEnvVarMap([...services].reverse(), 'test2', true)).to.deep.equal(expected);
  });

  it('a pod in default sees its other services only with links on', () => {
    expect(getServiceEnvVarMap(services, 'default', false)).to.deep.equal(
      linkVars('KUBERNETES', '1.2.3.1', 8081),
    );
    expect(getServiceEnvVarMap(services, 'default', true)).to.deep.equal({
      ...linkVars('KUBERNETES', '1.2.3.1', 8081),
      ...linkVars('NOT_SPECIAL', '1.2.3.8', 8088),
    });
  });

  it('skips services without a cluster IP', () => {
    expect(isServiceIPSet(svc('a', 'x', 'None', 1))).to.equal(false);
    expect(isServiceIPSet(svc('a', 'x', '', 1))).to.equal(false);
    expect(isServiceIPSet({})).to.equal(false);
    expect(getServiceEnvVarMap([svc('headless', 'x', 'None', 80)], 'x')).to.deep.equal({});
  });
});

describe('service links: the variables', () => {
  it('names every port, gives the first the unnumbered names, and lower-cases protocols in URLs', () => {
    const s: Service = {
      metadata: { name: 'my-db', namespace: 'x' },
      spec: {
        clusterIP: '10.0.0.7',
        ports: [
          { name: 'sql', port: 5432 },
          { name: 'metrics-http', port: 9187, protocol: 'TCP' },
          { name: 'dns', port: 53, protocol: 'UDP' },
        ],
      },
    };
    expect(fromServices([s])).to.deep.equal([
      { name: 'MY_DB_SERVICE_HOST', value: '10.0.0.7' },
      { name: 'MY_DB_SERVICE_PORT', value: '5432' },
      { name: 'MY_DB_SERVICE_PORT_SQL', value: '5432' },
      { name: 'MY_DB_SERVICE_PORT_METRICS_HTTP', value: '9187' },
      { name: 'MY_DB_SERVICE_PORT_DNS', value: '53' },
      { name: 'MY_DB_PORT', value: 'tcp://10.0.0.7:5432' },
      { name: 'MY_DB_PORT_5432_TCP', value: 'tcp://10.0.0.7:5432' },
      { name: 'MY_DB_PORT_5432_TCP_PROTO', value: 'tcp' },
      { name: 'MY_DB_PORT_5432_TCP_PORT', value: '5432' },
      { name: 'MY_DB_PORT_5432_TCP_ADDR', value: '10.0.0.7' },
      { name: 'MY_DB_PORT_9187_TCP', value: 'tcp://10.0.0.7:9187' },
      { name: 'MY_DB_PORT_9187_TCP_PROTO', value: 'tcp' },
      { name: 'MY_DB_PORT_9187_TCP_PORT', value: '9187' },
      { name: 'MY_DB_PORT_9187_TCP_ADDR', value: '10.0.0.7' },
      { name: 'MY_DB_PORT_53_UDP', value: 'udp://10.0.0.7:53' },
      { name: 'MY_DB_PORT_53_UDP_PROTO', value: 'udp' },
      { name: 'MY_DB_PORT_53_UDP_PORT', value: '53' },
      { name: 'MY_DB_PORT_53_UDP_ADDR', value: '10.0.0.7' },
    ]);
  });

  it('brackets an IPv6 cluster IP in URLs only', () => {
    const env = getServiceEnvVarMap([svc('kubernetes', 'default', 'fd00:10:96::1', 443)], 'x');
    expect(env.KUBERNETES_SERVICE_HOST).to.equal('fd00:10:96::1');
    expect(env.KUBERNETES_PORT).to.equal('tcp://[fd00:10:96::1]:443');
    expect(env.KUBERNETES_PORT_443_TCP_ADDR).to.equal('fd00:10:96::1');
  });

  it('upper-cases and turns - into _, leaving dots and leading digits (as upstream today)', () => {
    expect(makeEnvVariableName('my-svc')).to.equal('MY_SVC');
    expect(makeEnvVariableName('1st.svc')).to.equal('1ST.SVC');
  });

  it('a service with no ports gets only its host variable', () => {
    expect(fromServices([{ metadata: { name: 'bare' }, spec: { clusterIP: '10.0.0.9' } }])).to.deep.equal([
      { name: 'BARE_SERVICE_HOST', value: '10.0.0.9' },
    ]);
  });

  it('feed envvars.ts as the lowest-precedence source, usable in $(VAR) expansion', () => {
    const container: Container = {
      name: 'app',
      env: [
        { name: 'API', value: 'https://$(KUBERNETES_SERVICE_HOST):$(KUBERNETES_SERVICE_PORT)' },
        { name: 'KUBERNETES_SERVICE_PORT', value: '9999' },
      ],
    };
    const pod: Pod = {
      metadata: { name: 'p', namespace: 'test1', uid: 'u' },
      spec: { containers: [container] },
    };
    const { env } = makeEnvironmentVariables(
      pod,
      container,
      { configMaps: new Map(), secrets: new Map() },
      {
        podIP: '',
        podIPs: [],
        hostIP: '',
        hostIPs: [],
        nodeName: 'n',
        serviceAccountName: 'default',
        serviceEnv: getServiceEnvVarMap(services, 'test1', false),
      },
    );
    const byName = Object.fromEntries(env.map((e) => [e.name, e.value]));
    expect(byName.API).to.equal('https://1.2.3.1:8081');
    expect(byName.KUBERNETES_SERVICE_PORT).to.equal('9999');
    expect(byName.KUBERNETES_PORT_8081_TCP_ADDR).to.equal('1.2.3.1');
  });
});
