/// The Prometheus text exposition format (version 0.0.4): a `# HELP` and `# TYPE` line
/// per family, then its samples; every sample carries the common labels first.
public struct MetricsText: Sendable {
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    public enum Kind: String, Sendable {
        case counter, gauge, histogram
    }

    private let common: [(String, String)]
    public private(set) var text = ""

    public init(commonLabels: [(String, String)] = []) {
        common = commonLabels
    }

    public mutating func family(_ name: String, _ kind: Kind, _ help: String) {
        text += "# HELP \(name) \(Self.escapeHelp(help))\n# TYPE \(name) \(kind.rawValue)\n"
    }

    public mutating func sample(_ name: String, _ labels: [(String, String)] = [], _ value: Double) {
        let all = common + labels
        let rendered = all.isEmpty ? "" : "{" + all.map { "\($0.0)=\"\(Self.escapeLabel($0.1))\"" }.joined(separator: ",") + "}"
        text += "\(name)\(rendered) \(Self.format(value))\n"
    }

    public mutating func counter(_ name: String, _ help: String, _ value: UInt64) {
        family(name, .counter, help)
        sample(name, [], Double(value))
    }

    public mutating func gauge(_ name: String, _ help: String, _ value: Double) {
        family(name, .gauge, help)
        sample(name, [], value)
    }

    public mutating func counters(_ name: String, _ help: String, _ family: Labelled<Counter>) {
        self.family(name, .counter, help)
        for (values, counter) in family.all {
            sample(name, Array(zip(family.labelNames, values)), Double(counter.value))
        }
    }

    public mutating func histogram(_ name: String, _ help: String, _ histogram: Histogram) {
        family(name, .histogram, help)
        histogramSamples(name, [], histogram)
    }

    public mutating func histograms(_ name: String, _ help: String, _ family: Labelled<Histogram>) {
        self.family(name, .histogram, help)
        for (values, histogram) in family.all {
            histogramSamples(name, Array(zip(family.labelNames, values)), histogram)
        }
    }

    /// One histogram's samples, after its `family` line.
    public mutating func histogramSamples(_ name: String, _ labels: [(String, String)], _ histogram: Histogram) {
        let (cumulative, sum) = histogram.snapshot
        for (bound, count) in zip(histogram.bounds.map(Self.format) + ["+Inf"], cumulative) {
            sample(name + "_bucket", labels + [("le", bound)], Double(count))
        }
        sample(name + "_sum", labels, sum)
        sample(name + "_count", labels, Double(cumulative.last ?? 0))
    }

    static func format(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }

    static func escapeLabel(_ value: String) -> String {
        var out = ""
        for character in value {
            switch character {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.append(character)
            }
        }
        return out
    }

    static func escapeHelp(_ value: String) -> String {
        var out = ""
        for character in value {
            switch character {
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            default: out.append(character)
            }
        }
        return out
    }
}
