#!/bin/sh
# Makes, once, what docker-compose.yml needs that must never be committed. Never overwrites a file. Every file of
# deploy/secrets/ is 0640 and your group's (files kept from an earlier run too), the folder 0700, .env 0600.
#
#   .env                                    from deploy/.env.example, with a generated POSTGRES_PASSWORD and your group
#                                           as SECRETS_GID (added to a .env that has none)
#   deploy/secrets/webhook_secret           WEBHOOK_SECRET: HMAC key of the webhook URL tokens
#   deploy/secrets/payload_encryption_keys  PAYLOAD_ENCRYPTION_KEYS: the AES-256 key of Temporal payloads (id:base64)
#   deploy/secrets/clinics.json             CLINICS_FILE: a demo clinic on the sandbox, its API token printed once
#   deploy/secrets/inbox_database_url       INBOX_DATABASE_URL: the API replicas' callback inbox in the bundled
#                                           PostgreSQL (database and role `journeys`, a generated password)
#   deploy/secrets/patient_key_database_url  PATIENT_KEY_DATABASE_URL: each patient's data key, for the API replicas,
#                                           the workers and the codec server (database and role
#                                           `journey_patient_keys`, a generated password)
#   deploy/secrets/temporal_database_password  the Temporal server's role `temporal_server` in the bundled PostgreSQL
#   deploy/secrets/postgres_replication_password  the standby's replication role `replicator`
#   deploy/secrets/audit_database_url       AUDIT_DATABASE_URL: the one audit trail of the API replicas, the workers
#                                           and the codec server in the bundled PostgreSQL (database `journey_audit`,
#                                           its insert-only writer role `journey_audit_writer`, a generated password)
#   deploy/secrets/audit_owner_password     the audit trail's owner `journey_audit_owner`, for the one-shot jobs only
#   deploy/secrets/codec_server_token       CODEC_SERVER_TOKEN: the bearer token the codec server requires
#   deploy/secrets/object_store_root_user   MinIO's root user and password (MINIO_ROOT_USER_FILE, _PASSWORD_FILE)
#   deploy/secrets/object_store_root_password
#   deploy/secrets/object_store_engine_credentials  the MinIO user journey-engine of the API replicas and the workers
#   deploy/secrets/object_store_codec_credentials   and journey-codec of the codec server, as AWS shared credentials
#                                           files (AWS_SHARED_CREDENTIALS_FILE)
#   The identity provider (Keycloak, realm deploy/keycloak/journeys-realm.json):
#   deploy/secrets/keycloak_database_password  its role `keycloak` in the bundled PostgreSQL
#   deploy/secrets/keycloak_admin_password     its own administrator, keycloak-admin (the admin console)
#   deploy/secrets/<client>_client_secret      the realm's confidential clients: temporal_ui (the Web UI's sign-in),
#                                              journey_worker, journey_api, journey_automation (service accounts)
#   deploy/secrets/codec_tls.crt, .key         the codec server's HTTPS certificate and key (CODEC_TLS_*_FILE):
#                                              self-signed for localhost and codec, made with openssl when it is here
#   deploy/secrets/api_tls.pem                 the load balancer's HTTPS certificate and key (port 3443, where the
#                                              admin routes are served), self-signed for localhost and api, one file
#
# Usage: sh deploy/init-secrets.sh [SECRETS_DIR [ENV_FILE]]
set -eu

here=$(cd "$(dirname "$0")" && pwd)
secrets=${1:-$here/secrets}
env_file=${2:-$(dirname "$here")/.env}

random_b64() { head -c "$1" /dev/urandom | base64 | tr -d '\n'; }
# Letters, digits, `-` and `_` only: safe in a URL's user information and in an INI file without quoting.
random_token() { random_b64 "$1" | tr -d '=' | tr '+/' '-_'; }
random_hex() { head -c "$1" /dev/urandom | od -An -tx1 | tr -d ' \n'; }
sha256_hex() {
  if command -v sha256sum > /dev/null 2>&1; then
    printf '%s' "$1" | sha256sum | cut -d ' ' -f 1
  else
    printf '%s' "$1" | shasum -a 256 | cut -d ' ' -f 1
  fi
}

umask 077
mkdir -p "$secrets"
chmod 700 "$secrets"
# Each file is yours and your group's only (0640), the folder yours only (0700). Several containers read them as a
# user of their own (the engine's image as `node`, Keycloak, Temporal, HAProxy): docker-compose.yml adds your group,
# SECRETS_GID in .env, to those containers (group_add), so they read a file through its group and nobody else can.
gid=$(id -g)

# protect FILE: the file belongs to your group and is 0640 (a file kept from an earlier run too).
protect() {
  chgrp "$gid" "$1" && chmod 640 "$1"
}

# write FILE CONTENT
write() {
  if [ -e "$1" ]; then
    protect "$1"
    echo "kept     $1"
    return 1
  fi
  printf '%s\n' "$2" > "$1"
  protect "$1"
  echo "created  $1"
}

write "$secrets/webhook_secret" "$(random_token 32)" || true
write "$secrets/payload_encryption_keys" "key-1:$(random_b64 32)" || true

token=$(random_token 24)
clinics=$(cat << EOF
[
  {
    "clinicId": "demo-clinic",
    "name": "Demo Clinic (sandbox)",
    "examServiceApiKey": "sandbox-demo-key",
    "apiTokenSha256": ["$(sha256_hex "$token")"],
    "notificationSecret": "whsec_$(random_b64 24)"
  }
]
EOF
)
if write "$secrets/clinics.json" "$clinics"; then
  echo "         demo-clinic's API token (shown once): $token"
  echo "         Authorization: Bearer $token"
fi

write "$secrets/inbox_database_url" "postgres://journeys:$(random_token 24)@postgres:5432/journeys" || true
write "$secrets/patient_key_database_url" \
  "postgres://journey_patient_keys:$(random_token 24)@postgres:5432/journey_patient_keys" || true
# Temporal's own role, temporal_server (the temporal-database job makes it; the server and its schema job sign in as it).
write "$secrets/temporal_database_password" "$(random_token 24)" || true
write "$secrets/postgres_replication_password" "$(random_token 24)" || true
# The audit trail's owner, journey_audit_owner: the one-shot audit jobs alone sign in as it.
write "$secrets/audit_owner_password" "$(random_token 24)" || true
# The audit trail's writer (the audit-trail job creates the database, the table and the role from this URL).
write "$secrets/audit_database_url" \
  "postgres://journey_audit_writer:$(random_token 24)@postgres:5432/journey_audit" || true
write "$secrets/codec_server_token" "$(random_token 32)" || true

write "$secrets/object_store_root_user" "journeys-$(random_hex 4)" || true
write "$secrets/object_store_root_password" "$(random_token 24)" || true
# The engine's own users in MinIO (the minio-bucket job makes them and their policies): journey-engine for the API
# replicas and the workers (the attachments, the audit checkpoints), journey-codec for the codec server (the audit
# checkpoints), each as an AWS shared credentials file (AWS_SHARED_CREDENTIALS_FILE).
for user in engine codec; do
  write "$secrets/object_store_${user}_credentials" "[default]
aws_access_key_id = journey-$user
aws_secret_access_key = $(random_token 24)" || true
done

# The identity provider's. Keycloak takes the clients' secrets into its realm when it first imports it: a file changed
# later changes nothing there (change the secret in Keycloak too). The realm has no people: `npm run add-person` adds
# each with a role, a temporary password and, for operators and admins, a second factor.
write "$secrets/keycloak_database_password" "$(random_token 24)" || true
write "$secrets/keycloak_admin_password" "$(random_token 24)" || true
for client in temporal_ui journey_worker journey_api journey_automation; do
  write "$secrets/${client}_client_secret" "$(random_token 32)" || true
done
echo "         people: none yet; add each with KEYCLOAK_ADMIN_PASSWORD_FILE=$secrets/keycloak_admin_password npm run add-person -- --username <name> --role <viewer|operator|admin>"

# self_signed NAME SERVICE KEY CERT: a self-signed server certificate for localhost, 127.0.0.1 and the service's name
# in the compose network, made with openssl into the two files.
self_signed() {
  key_file=$3
  cert_file=$4
  # Not a CA (Firefox refuses a CA certificate as a server's); an openssl that cannot say so makes it without.
  set -- -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -sha256 -days 397 \
    -subj "/CN=localhost/O=patient journey engine (docker compose $1)" \
    -addext "subjectAltName=DNS:localhost,DNS:$2,IP:127.0.0.1" -addext 'extendedKeyUsage=serverAuth' \
    -keyout "$key_file" -out "$cert_file"
  openssl req "$@" -addext 'basicConstraints=critical,CA:FALSE' > /dev/null 2>&1 || openssl req "$@" > /dev/null 2>&1
  protect "$key_file"
  protect "$cert_file"
}

# The codec server's HTTPS certificate (the Web UI passes an operator's token to an https:// codec endpoint only):
# for localhost (the browsers) and codec (the temporal-cli service), its key never anywhere else.
codec_certificate() {
  self_signed codec codec "$secrets/codec_tls.key" "$secrets/codec_tls.crt"
}
if [ -e "$secrets/codec_tls.crt" ] || [ -e "$secrets/codec_tls.key" ]; then
  for f in "$secrets/codec_tls.crt" "$secrets/codec_tls.key"; do
    if [ -e "$f" ]; then protect "$f"; fi
  done
  echo "kept     $secrets/codec_tls.crt, codec_tls.key"
elif command -v openssl > /dev/null 2>&1 && codec_certificate; then
  echo "created  $secrets/codec_tls.crt, codec_tls.key"
  echo "         the codec server's certificate: open https://localhost:8888/healthz once and accept it"
else
  echo "missing  $secrets/codec_tls.crt, codec_tls.key: no openssl here; put a certificate for localhost and codec" \
    "and its key there (PEM)" >&2
fi

# A file of this folder that this script did not make (Temporal Cloud's API key...) is a secret too.
for f in "$secrets"/*; do
  if [ -f "$f" ]; then protect "$f"; fi
done

# The load balancer's HTTPS listener (port 3443: the admin routes and the audit export are served there only): for
# localhost and api (its name in the compose network), certificate and key in one PEM file as HAProxy reads it.
api_certificate() {
  self_signed api api "$secrets/api_tls.pem.key" "$secrets/api_tls.pem.crt" &&
    cat "$secrets/api_tls.pem.crt" "$secrets/api_tls.pem.key" > "$secrets/api_tls.pem" &&
    rm -f "$secrets/api_tls.pem.crt" "$secrets/api_tls.pem.key" &&
    protect "$secrets/api_tls.pem"
}
if [ -e "$secrets/api_tls.pem" ]; then
  protect "$secrets/api_tls.pem"
  echo "kept     $secrets/api_tls.pem"
elif command -v openssl > /dev/null 2>&1 && api_certificate; then
  echo "created  $secrets/api_tls.pem"
  echo "         the API's HTTPS certificate (port 3443, the admin routes): self-signed, trust it or replace it"
else
  rm -f "$secrets/api_tls.pem.crt" "$secrets/api_tls.pem.key"
  echo "missing  $secrets/api_tls.pem: no openssl here; put a certificate for localhost and api and its key there," \
    "both in that one PEM file" >&2
fi

if [ ! -e "$env_file" ]; then
  sed -e "s|^POSTGRES_PASSWORD=\$|POSTGRES_PASSWORD=$(random_token 24)|" -e "s|^SECRETS_GID=\$|SECRETS_GID=$gid|" \
    "$here/.env.example" > "$env_file"
  echo "created  $env_file"
elif ! grep -q '^SECRETS_GID=' "$env_file"; then
  # A .env from before SECRETS_GID: the rest of it is kept as it is.
  printf '\n# The group of the files in deploy/secrets/ (deploy/.env.example says more).\nSECRETS_GID=%s\n' "$gid" \
    >> "$env_file"
  echo "updated  $env_file: SECRETS_GID=$gid"
else
  echo "kept     $env_file"
fi
chmod 600 "$env_file"
