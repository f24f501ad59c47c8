// A long-lived Apache Jena (ARQ / TDB2) query process for store/jena.py.
//
// Start:  java -cp <xerces fix dir>:<jena jars> JenaQueryServer --data kb.ttl [--base IRI] [--tdb2 DIR]
// The data is loaded once (an in-memory dataset, or a TDB2 directory that is loaded from the
// Turtle only when it is empty), then one line is written to stdout:
//     {"ready":true,"triples":N,"load_ms":T,"loaded":true|false,"jena":"4.5.0"}
// and requests are answered one at a time, one line each way:
//     request   {"query": "...", "base": "http://..." | null, "timeout_ms": N}   (N <= 0: no limit)
//     response  SPARQL 1.1 JSON results (SELECT, ASK), compacted to one line, or
//               {"error": "...", "kind": "syntax"|"update"|"refused"|"timeout"|"other"
//                [, "line": L, "column": C]}
// End of stdin ends the process. Only queries run here: SPARQL Update is answered with kind
// "update" and SERVICE (a call to another endpoint) with kind "refused", before execution.
// Logging and anything else printed goes to stderr; stdout carries the protocol only.
//
// No dependency beyond Jena and the JDK: requests are parsed with Jena's own JSON reader
// (org.apache.jena.atlas.json).
//
// Also: java <classpath> JenaQueryServer.java --compile SRC OUTDIR compiles SRC into OUTDIR
// with the JDK's compiler API, for machines with the java source launcher but no javac.

import java.io.BufferedOutputStream;
import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.jena.atlas.json.JSON;
import org.apache.jena.atlas.json.JsonObject;
import org.apache.jena.atlas.json.JsonValue;
import org.apache.jena.query.ARQ;
import org.apache.jena.query.Dataset;
import org.apache.jena.query.DatasetFactory;
import org.apache.jena.query.Query;
import org.apache.jena.query.QueryCancelledException;
import org.apache.jena.query.QueryExecution;
import org.apache.jena.query.QueryExecutionDatasetBuilder;
import org.apache.jena.query.QueryFactory;
import org.apache.jena.query.QueryParseException;
import org.apache.jena.query.ReadWrite;
import org.apache.jena.query.ResultSetFormatter;
import org.apache.jena.query.Syntax;
import org.apache.jena.riot.Lang;
import org.apache.jena.riot.RDFParser;
import org.apache.jena.riot.RDFParserBuilder;
import org.apache.jena.riot.lang.StreamRDFCounting;
import org.apache.jena.riot.system.StreamRDFLib;
import org.apache.jena.sparql.algebra.Algebra;
import org.apache.jena.sparql.algebra.OpVisitorBase;
import org.apache.jena.sparql.algebra.op.OpService;
import org.apache.jena.sparql.algebra.walker.Walker;
import org.apache.jena.sparql.core.DatasetGraph;
import org.apache.jena.sparql.expr.ExprVisitorBase;
import org.apache.jena.sparql.service.ServiceExecutorRegistry;
import org.apache.jena.sparql.syntax.ElementService;
import org.apache.jena.sparql.syntax.ElementVisitorBase;
import org.apache.jena.sparql.syntax.ElementWalker;
import org.apache.jena.sys.JenaSystem;
import org.apache.jena.tdb2.TDB2Factory;
import org.apache.jena.update.UpdateFactory;
import org.apache.jena.update.UpdateRequest;

public final class JenaQueryServer {

    private JenaQueryServer() {}

    private static final Pattern POSITION = Pattern.compile("line (\\d+), column (\\d+)");

    public static void main(String[] args) throws Exception {
        if (args.length == 3 && args[0].equals("--compile")) {
            System.exit(compile(args[1], args[2]));
        }
        String data = null, base = null, tdb2 = null;
        for (int i = 0; i + 1 < args.length; i += 2) {
            switch (args[i]) {
                case "--data": data = args[i + 1]; break;
                case "--base": base = args[i + 1]; break;
                case "--tdb2": tdb2 = args[i + 1]; break;
                default: throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        if (data == null) throw new IllegalArgumentException("--data FILE is required");

        // The protocol owns stdout; a stray print from any library goes to stderr.
        OutputStream out = new BufferedOutputStream(new FileOutputStream(FileDescriptor.out), 1 << 16);
        System.setOut(System.err);

        JenaSystem.init();
        // Defence in depth: SERVICE is refused before execution, and could not run anyway.
        ARQ.getContext().set(ARQ.httpServiceAllowed, false);
        ServiceExecutorRegistry.set(ARQ.getContext(), new ServiceExecutorRegistry());

        long t0 = System.nanoTime();
        Dataset ds;
        long triples = -1;
        boolean loaded = false;
        if (tdb2 == null) {
            ds = DatasetFactory.create();
            triples = load(ds, data, base);
            loaded = true;
        } else {
            Files.createDirectories(Paths.get(tdb2));
            ds = TDB2Factory.connectDataset(tdb2);
            ds.begin(ReadWrite.READ);
            boolean empty;
            try { empty = ds.asDatasetGraph().isEmpty(); } finally { ds.end(); }
            if (empty) {
                triples = load(ds, data, base);
                loaded = true;
            }
        }
        JsonObject ready = new JsonObject();
        ready.put("ready", true);
        ready.put("triples", triples);
        ready.put("loaded", loaded);
        ready.put("load_ms", (System.nanoTime() - t0) / 1_000_000);
        ready.put("jena", ARQ.VERSION);
        writeLine(out, JSON.toStringFlat(ready).getBytes(StandardCharsets.UTF_8));

        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8), 1 << 16);
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            byte[] answer;
            try {
                answer = answer(ds, line);
            } catch (Throwable e) {  // OutOfMemoryError, StackOverflowError: report, keep serving
                answer = error(e.getClass().getSimpleName() + ": " + e.getMessage(), "other");
            }
            writeLine(out, answer);
        }
        ds.close();
    }

    /** Parse the Turtle into ds in one write transaction (atomic for TDB2); the triple count. */
    private static long load(Dataset ds, String data, String base) {
        DatasetGraph dsg = ds.asDatasetGraph();
        StreamRDFCounting counter = StreamRDFLib.count(StreamRDFLib.dataset(dsg));
        ds.begin(ReadWrite.WRITE);
        try {
            RDFParserBuilder parser = RDFParser.create().source(Paths.get(data)).lang(Lang.TURTLE);
            if (base != null) parser.base(base);
            parser.parse(counter);
            ds.commit();
        } finally {
            ds.end();
        }
        return counter.count();
    }

    private static byte[] answer(Dataset ds, String line) {
        String text, base = null;
        long timeoutMs = 0;
        try {
            JsonObject request = JSON.parse(line);
            text = request.get("query").getAsString().value();
            JsonValue b = request.get("base");
            if (b != null && b.isString()) base = b.getAsString().value();
            JsonValue t = request.get("timeout_ms");
            if (t != null && t.isNumber()) timeoutMs = t.getAsNumber().value().longValue();
        } catch (RuntimeException e) {
            return error("bad request line: " + e.getMessage(), "other");
        }

        Query query;
        try {
            query = base == null ? QueryFactory.create(text, Syntax.syntaxSPARQL_11)
                                 : QueryFactory.create(text, base, Syntax.syntaxSPARQL_11);
        } catch (QueryParseException e) {
            if (isUpdate(text, base)) {
                return error("SPARQL Update refused: queries here are read-only, the KB was not changed", "update");
            }
            JsonObject o = errorObject(e.getMessage(), "syntax");
            // The position in the message is the offending token's (getLine/getColumn may name
            // the token before it, and lexical errors have only the message).
            int lineNo = e.getLine(), column = e.getColumn();
            Matcher m = POSITION.matcher(e.getMessage() == null ? "" : e.getMessage());
            if (m.find()) { lineNo = Integer.parseInt(m.group(1)); column = Integer.parseInt(m.group(2)); }
            if (lineNo > 0) {
                o.put("line", lineNo);
                o.put("column", Math.max(column, 1));  // Jena says column 0 at the end of an empty text
            }
            return JSON.toStringFlat(o).getBytes(StandardCharsets.UTF_8);
        } catch (RuntimeException e) {  // e.g. a bad IRI in BASE
            return error(e.getMessage(), "syntax");
        }
        if (!query.isSelectType() && !query.isAskType()) {
            return error("only SELECT and ASK queries are answered here, not " + query.queryType(), "refused");
        }
        if (usesService(text, query)) {
            return error("SERVICE refused: a query here may not call other endpoints", "refused");
        }

        ds.begin(ReadWrite.READ);
        try {
            QueryExecutionDatasetBuilder builder = QueryExecutionDatasetBuilder.create().dataset(ds).query(query);
            if (timeoutMs > 0) builder.timeout(timeoutMs, TimeUnit.MILLISECONDS);
            try (QueryExecution exec = builder.build()) {
                ByteArrayOutputStream buffer = new ByteArrayOutputStream(1024);
                if (query.isAskType()) {
                    ResultSetFormatter.outputAsJSON(buffer, exec.execAsk());
                } else {
                    ResultSetFormatter.outputAsJSON(buffer, exec.execSelect());
                }
                return compact(buffer.toByteArray());
            }
        } catch (QueryCancelledException e) {
            return error("query exceeded the time limit of " + timeoutMs + " ms", "timeout");
        } catch (RuntimeException e) {
            return error(e.getClass().getSimpleName() + ": " + e.getMessage(), "other");
        } finally {
            ds.end();
        }
    }

    private static boolean isUpdate(String text, String base) {
        try {
            UpdateRequest request = base == null ? UpdateFactory.create(text, Syntax.syntaxSPARQL_11)
                                                 : UpdateFactory.create(text, base, Syntax.syntaxSPARQL_11);
            return !request.getOperations().isEmpty();  // an empty text is an empty update request
        } catch (RuntimeException e) {
            return false;
        }
    }

    /** SERVICE anywhere: in the pattern, in subqueries, inside FILTER (NOT) EXISTS. */
    private static boolean usesService(String text, Query query) {
        // A cheap pre-check: no SERVICE without the word (or a unicode escape that could spell it).
        String lower = text.toLowerCase(Locale.ROOT);
        if (lower.indexOf("service") < 0 && lower.indexOf("\\u") < 0) return false;
        final boolean[] found = {false};
        ElementWalker.walk(query.getQueryPattern(), new ElementVisitorBase() {
            @Override public void visit(ElementService el) { found[0] = true; }
        });
        if (found[0]) return true;
        Walker.walk(Algebra.compile(query), new OpVisitorBase() {
            @Override public void visit(OpService op) { found[0] = true; }
        }, new ExprVisitorBase());
        return found[0];
    }

    /** Drop the whitespace outside strings: Jena pretty-prints, the protocol wants one line
     *  (inside a JSON string a newline is always escaped, so none survives). */
    private static byte[] compact(byte[] json) {
        ByteArrayOutputStream outBytes = new ByteArrayOutputStream(json.length);
        boolean inString = false, escaped = false;
        for (byte c : json) {
            if (inString) {
                if (escaped) escaped = false;
                else if (c == '\\') escaped = true;
                else if (c == '"') inString = false;
                if (c == '\n' || c == '\r') continue;  // never in valid output; keep the framing safe
                outBytes.write(c);
            } else if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
                // skip
            } else {
                if (c == '"') inString = true;
                outBytes.write(c);
            }
        }
        return outBytes.toByteArray();
    }

    private static JsonObject errorObject(String message, String kind) {
        JsonObject o = new JsonObject();
        o.put("error", message == null ? "(no message)" : message);
        o.put("kind", kind);
        return o;
    }

    private static byte[] error(String message, String kind) {
        return JSON.toStringFlat(errorObject(message, kind)).getBytes(StandardCharsets.UTF_8);
    }

    private static void writeLine(OutputStream out, byte[] line) throws IOException {
        out.write(line);
        out.write('\n');
        out.flush();
    }

    private static int compile(String source, String outDir) throws IOException {
        javax.tools.JavaCompiler compiler = javax.tools.ToolProvider.getSystemJavaCompiler();
        if (compiler == null) {
            System.err.println("no Java compiler in this runtime (jdk.compiler module missing)");
            return 2;
        }
        Files.createDirectories(Path.of(outDir));
        return compiler.run(null, null, null, List.of("-nowarn", "-encoding", "UTF-8",
                "-cp", System.getProperty("java.class.path"), "-d", outDir, source).toArray(new String[0]));
    }
}
