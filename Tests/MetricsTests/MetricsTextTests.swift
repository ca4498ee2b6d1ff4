import Foundation
@testable import Metrics
import Testing

/// The exposition is checked against Prometheus's own parser (`prometheus_client`, PyPI)
/// where it runs, and by the format's rules here.
@Suite struct MetricsTextTests {
    @Test func histogramBucketsAreCumulativeWithTheSumInSeconds() {
        let histogram = Histogram(bounds: [0.001, 0.01, 0.1])
        for nanoseconds: UInt64 in [500_000, 1_000_000, 5_000_000, 50_000_000, 2_000_000_000] { histogram.observe(nanoseconds: nanoseconds) }
        let (cumulative, sum) = histogram.snapshot
        // A value on a bound is in that bucket (le: less or equal).
        #expect(cumulative == [2, 3, 4, 5])
        #expect(abs(sum - 2.0565) < 1e-9)
        histogram.observe(.milliseconds(20))
        #expect(histogram.snapshot.cumulative == [2, 3, 5, 6])
    }

    @Test func labelsAreEscapedAndSamplesCarryTheCommonOnes() {
        var text = MetricsText(commonLabels: [("mount", "/tmp/a \"b\"\\c\nd")])
        text.counter("x_total", "a help\nwith a newline and \\", 3)
        text.gauge("y", "a gauge", 0.25)
        #expect(text.text == """
            # HELP x_total a help\\nwith a newline and \\\\
            # TYPE x_total counter
            x_total{mount="/tmp/a \\"b\\"\\\\c\\nd"} 3
            # HELP y a gauge
            # TYPE y gauge
            y{mount="/tmp/a \\"b\\"\\\\c\\nd"} 0.25

            """)
    }

    /// Prometheus's parser reads back every family, label value and bucket as written.
    @Test func prometheusParsesItBack() async throws {
        let parser = Process()
        parser.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        parser.arguments = ["python3", "-c", "import prometheus_client"]
        try parser.run()
        parser.waitUntilExit()
        try #require(parser.terminationStatus == 0, "prometheus_client is not installed (Packaging/test.sh installs it)")
        let mount = "/mnt/odd \"name\"\\ with\nnewline"
        var text = MetricsText(commonLabels: [("mount", mount)])
        let requests = Labelled<Histogram>(["operation"]) { Histogram() }
        requests.child("read").observe(nanoseconds: 70_000)
        requests.child("write").observe(.seconds(3))
        let errors = Labelled<Counter>(["operation", "kind"]) { Counter() }
        errors.child("get", "unreachable").add(4)
        text.histograms("t_seconds", "timings", requests)
        text.counters("t_errors_total", "errors", errors)
        text.gauge("t_age_seconds", "an age", 1.5)
        let script = """
            import json, sys
            from prometheus_client.parser import text_string_to_metric_families
            out = []
            for family in text_string_to_metric_families(sys.stdin.read()):
                for sample in family.samples:
                    out.append([family.name, family.type, sample.name, sample.labels, sample.value])
            json.dump(out, sys.stdout)
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script]
        let (input, output) = (Pipe(), Pipe())
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        input.fileHandleForWriting.write(Data(text.text.utf8))
        try input.fileHandleForWriting.close()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0)
        let samples = try #require(try JSONSerialization.jsonObject(with: data) as? [[Any]])
        #expect(samples.allSatisfy { ($0[3] as? [String: String])?["mount"] == mount })
        let byName = Dictionary(grouping: samples) { "\($0[2])" + (($0[3] as? [String: String]).map { l in l.filter { $0.key != "mount" }.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",") } ?? "") }
        func value(_ key: String) -> Double? { (byName[key]?.first?[4] as? NSNumber)?.doubleValue }
        #expect(value("t_seconds_bucketle=0.0001,operation=read") == 1)
        #expect(value("t_seconds_bucketle=5,operation=write") == 1)
        #expect(value("t_seconds_bucketle=2.5,operation=write") == 0)
        #expect(value("t_seconds_bucketle=+Inf,operation=write") == 1)
        #expect(value("t_seconds_sumoperation=write") == 3)
        #expect(value("t_seconds_countoperation=read") == 1)
        #expect(value("t_errors_totalkind=unreachable,operation=get") == 4)
        #expect(value("t_age_seconds") == 1.5)
        #expect(Set(samples.map { "\($0[0]) \($0[1])" }) == ["t_seconds histogram", "t_errors counter", "t_age_seconds gauge"])
    }
}
