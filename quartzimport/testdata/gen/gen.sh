#!/bin/sh
# Regenerates quartzimport/testdata/quartz_store.sql and quartz_fires.json
# with real Quartz 2.3.2 (see QuartzStore.java). Run from the repository
# root: quartzimport/testdata/gen/gen.sh [MYSQL_DSN_URL]
#
# The argument is a mysql:// URL of a MariaDB/MySQL server whose user may
# create and drop a scratch database (default mysql://root@127.0.0.1:3306).
# Needs a JDK, Debian's libquartz2-java, libmariadb-java and libhikaricp-java,
# and the mysql/mysqldump clients.
set -eu
url=${1:-mysql://root@127.0.0.1:3306}
rest=${url#mysql://}
userinfo=${rest%@*}
hostport=${rest#*@}
user=${userinfo%%:*}
password=""
case $userinfo in *:*) password=${userinfo#*:} ;; esac
host=${hostport%:*}
port=${hostport#*:}
[ "$port" = "$hostport" ] && port=3306
db=chime_quartz_gen_$$
J=/usr/share/java
cp="$J/quartz2.jar:$J/mariadb-java-client.jar:$J/HikariCP.jar:$J/slf4j-api.jar:$J/slf4j-nop.jar"
out=quartzimport/testdata
gen=$out/gen
my() { MYSQL_PWD=$password "$@" -h "$host" -P "$port" -u "$user"; }

classes=$(mktemp -d)
trap 'rm -rf "$classes"; my mysql -e "DROP DATABASE IF EXISTS $db"' EXIT
javac -nowarn -d "$classes" -cp "$cp" "$gen"/QuartzStore.java "$gen"/com/acme/*.java
my mysql -e "CREATE DATABASE $db CHARACTER SET utf8mb4"
java -Duser.timezone=UTC -cp "$cp:$classes" QuartzStore \
	"jdbc:mariadb://$host:$port/$db" "$user" "$password" "$out/quartz_fires.json"
# One INSERT per row and no comments: a readable, stable diff. --compact
# leaves out the foreign-key switch the tables' order needs.
{
	echo 'SET FOREIGN_KEY_CHECKS=0;'
	my mysqldump --hex-blob --skip-comments --compact --skip-extended-insert --order-by-primary "$db"
	echo 'SET FOREIGN_KEY_CHECKS=1;'
} >"$out/quartz_store.sql"
