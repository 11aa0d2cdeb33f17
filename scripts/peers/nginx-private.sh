# Shared by start-nginx.sh and start-nginx-site.sh (sourced after lib.sh, not run): a PRIVATE
# nginx (own config, not the Debian service) whose pid, logs and temp paths all live in one
# directory. Each script writes its own http { } content and its own "ready" line.

# nginx_prepare <dir> <port>: checks the binaries and that the port is free, makes <dir>'s layout.
# Sets NGINX (the binary), DIR (absolute), PIDFILE, and T0 (for elapsed_ms).
nginx_prepare() {
  need nginx nginx
  need curl curl
  NGINX=$(command -v nginx || echo /usr/sbin/nginx)
  refuse_taken_port "$2"
  mkdir -p "$1"; DIR=$(cd "$1" && pwd)
  # Workers run as an unprivileged user when started as root: they must be able to traverse $DIR.
  chmod 0755 "$DIR"
  mkdir -p "$DIR"/{logs,tmp,run}
  PIDFILE="$DIR/run/nginx.pid"
  T0=$(date +%s%N)
}

# nginx_write_conf <worker_processes> <worker_connections> <access_log> < http-content
# Writes $DIR/nginx.conf: the private instance's settings, then stdin inside http { }.
nginx_write_conf() {
  local content
  content=$(cat)
  cat > "$DIR/nginx.conf" <<CONF
worker_processes $1;
pid $PIDFILE;
error_log $DIR/logs/error.log warn;
$( [ "$(id -u)" = 0 ] && echo "user www-data;" )
events { worker_connections $2; }
http {
  access_log $3;
  client_body_temp_path $DIR/tmp/body;
  proxy_temp_path $DIR/tmp/proxy;
  fastcgi_temp_path $DIR/tmp/fastcgi;
  uwsgi_temp_path $DIR/tmp/uwsgi;
  scgi_temp_path $DIR/tmp/scgi;
$content
}
CONF
}

# nginx_start_and_wait <url> [curl option...]: checks the config, starts nginx, and waits (5 s at
# most) until its pid file is written and <url> answers; exits 1 naming the error log if it did not start.
nginx_start_and_wait() {
  local url=$1; shift
  "$NGINX" -t -q -p "$DIR" -c "$DIR/nginx.conf" -e "$DIR/logs/error.log"
  "$NGINX" -p "$DIR" -c "$DIR/nginx.conf" -e "$DIR/logs/error.log"
  for _ in $(seq 1 100); do [ -s "$PIDFILE" ] && curl -s "$@" -o /dev/null "$url" && break; sleep 0.05; done
  [ -s "$PIDFILE" ] || { echo "nginx did not start, see $DIR/logs/error.log" >&2; exit 1; }
}
