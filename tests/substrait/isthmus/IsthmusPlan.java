// IsthmusPlan — write the binary Substrait plans Isthmus makes of SQL
// queries over the differential test's orders table:
//   java -cp <isthmus classpath> IsthmusPlan.java "<sql>" <out file> ...
// (a single-file source program; no build step; one JVM for all queries).
import io.substrait.isthmus.SqlToSubstrait;
import io.substrait.isthmus.sql.SubstraitCreateStatementParser;
import io.substrait.plan.PlanProtoConverter;
import java.nio.file.Files;
import java.nio.file.Paths;

public class IsthmusPlan {
    public static void main(String[] args) throws Exception {
        var catalog = SubstraitCreateStatementParser.processCreateStatementsToCatalog(
            "CREATE TABLE orders (id BIGINT, region VARCHAR, amount DOUBLE, "
            + "status VARCHAR, qty BIGINT, ts TIMESTAMP)");
        for (int i = 0; i + 1 < args.length; i += 2) {
            var plan = new SqlToSubstrait().convert(args[i], catalog);
            var proto = new PlanProtoConverter().toProto(plan);
            Files.write(Paths.get(args[i + 1]), proto.toByteArray());
        }
    }
}
