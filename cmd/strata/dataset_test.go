package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The demo dataset is generated here, deterministically, and committed as demo/catalogue.json so that the binary
// embeds it. Regenerate it after changing the generator with
//
//	go test ./cmd/strata -run TestDemoDataset -update
var update = flag.Bool("update", false, "rewrite the generated test files (demo/catalogue.json, testdata/cli.txt) from what the code does now")

func TestDemoDataset(t *testing.T) {
	want := generateCatalogue()
	if *update {
		if err := os.WriteFile(filepath.Join("demo", "catalogue.json"), want, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote demo/catalogue.json (%d bytes)", len(want))
	}
	got, err := os.ReadFile(filepath.Join("demo", "catalogue.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("demo/catalogue.json is not what the generator makes; run: go test ./cmd/strata -run TestDemoDataset -update")
	}
	if !*update && !bytes.Equal(got, catalogueJSON) {
		t.Fatalf("the embedded catalogue differs from demo/catalogue.json; rebuild")
	}
	if len(got) > 300<<10 {
		t.Errorf("demo/catalogue.json is %d bytes; keep it under 300 KiB", len(got))
	}
	var doc struct {
		Products []struct {
			ID           string `json:"id"`
			Category     string `json:"category"`
			Discontinued bool   `json:"discontinued"`
		} `json:"products"`
		Orders []json.RawMessage `json:"orders"`
	}
	if err := json.Unmarshal(got, &doc); err != nil {
		t.Fatal(err)
	}
	if n := len(doc.Products); n < 200 || n > 500 {
		t.Errorf("%d products; want a few hundred", n)
	}
	if len(doc.Orders) < 50 {
		t.Errorf("%d orders; want some", len(doc.Orders))
	}
	// The story depends on these: the featured product is a tent, and some product is discontinued.
	if doc.Products[demoProductIndex].Category != demoCategory {
		t.Errorf("product %d is in %q; the demo features a product of %q", demoProductIndex, doc.Products[demoProductIndex].Category, demoCategory)
	}
	var discontinued int
	for _, p := range doc.Products {
		if p.Discontinued {
			discontinued++
		}
	}
	if discontinued == 0 {
		t.Error("no discontinued product to remove")
	}
}

// rng is splitmix64: tiny, and its sequence never changes between Go releases, so the dataset is reproducible.
type rng struct{ s uint64 }

func (r *rng) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// intn returns a number in [lo, hi].
func (r *rng) intn(lo, hi int) int { return lo + int(r.next()%uint64(hi-lo+1)) }

func (r *rng) pick(s []string) string { return s[r.next()%uint64(len(s))] }

// cents formats an amount of cents as a decimal number with two places, the way the catalogue stores prices.
func cents(c int) json.Number { return json.Number(fmt.Sprintf("%d.%02d", c/100, c%100)) }

type genCategory struct {
	slug, name, prefix string
	count              int
	minPrice, maxPrice int // euros
	minWeight          int // grams
	maxWeight          int
	nouns, models      []string
	tags               []string
}

var genCategories = []genCategory{
	{"tents", "Tents", "TNT", 18, 119, 689, 900, 4200, []string{"Tent", "Tent", "Shelter"},
		[]string{"Ridgeline", "Basecamp", "Skyline", "Hollow", "Tarn", "Summit"}, []string{"1-person", "2-person", "3-person", "3-season", "4-season", "freestanding", "ultralight"}},
	{"sleeping-bags", "Sleeping bags", "SLP", 24, 79, 549, 600, 2100, []string{"Sleeping Bag", "Quilt", "Down Bag"},
		[]string{"Ember", "Glacier", "Nightjar", "Solstice", "Drift"}, []string{"down", "synthetic", "-5C", "0C", "+5C", "women's fit"}},
	{"backpacks", "Backpacks", "BPK", 30, 39, 329, 400, 2400, []string{"Pack", "Backpack", "Daypack"},
		[]string{"Trailhead", "Cirrus", "Scree", "Traverse", "Kite", "Ridge"}, []string{"20 L", "35 L", "50 L", "65 L", "hydration", "rain cover", "frameless"}},
	{"stoves", "Stoves", "STV", 16, 29, 189, 80, 900, []string{"Stove", "Burner", "Stove System"},
		[]string{"Flicker", "Kettle", "Piezo", "Blaze"}, []string{"canister", "liquid fuel", "integrated pot", "piezo ignition"}},
	{"cookware", "Cookware", "CKW", 22, 9, 119, 40, 800, []string{"Pot", "Mug", "Spork", "Pan", "Cook Set"},
		[]string{"Titan", "Nest", "Camp", "Trail"}, []string{"titanium", "aluminium", "nesting", "non-stick"}},
	{"headlamps", "Headlamps", "HLP", 20, 19, 149, 30, 180, []string{"Headlamp"},
		[]string{"Lumen", "Beacon", "Night Owl", "Spark"}, []string{"USB-C", "red light", "200 lm", "450 lm", "900 lm", "IPX7"}},
	{"jackets", "Jackets", "JKT", 34, 59, 599, 180, 900, []string{"Jacket", "Shell", "Hoody", "Parka"},
		[]string{"Storm", "Torrent", "Puffin", "Alpenglow", "Gale"}, []string{"waterproof", "down", "synthetic fill", "windproof", "hood", "men's", "women's"}},
	{"boots", "Boots", "BTS", 28, 69, 329, 600, 1600, []string{"Boot", "Trail Shoe", "Approach Shoe"},
		[]string{"Granite", "Talus", "Moraine", "Switchback"}, []string{"waterproof", "vegan", "wide fit", "Vibram sole", "mid cut"}},
	{"trekking-poles", "Trekking poles", "TRK", 14, 29, 179, 280, 600, []string{"Poles"},
		[]string{"Cairn", "Stride", "Carbon Z", "Alpine"}, []string{"carbon", "aluminium", "folding", "cork grip"}},
	{"water-filters", "Water filters", "WTR", 12, 19, 129, 60, 450, []string{"Filter", "Purifier", "Bottle Filter"},
		[]string{"Spring", "Brook", "Clearstream"}, []string{"0.1 micron", "squeeze", "gravity", "UV"}},
	{"climbing", "Climbing", "CLM", 36, 7, 259, 20, 3800, []string{"Harness", "Carabiner", "Belay Device", "Rope", "Helmet", "Quickdraw"},
		[]string{"Crux", "Dyno", "Crimp", "Onsight", "Redpoint"}, []string{"UIAA", "CE", "locking", "dry treated", "9.5 mm"}},
	{"navigation", "Navigation", "NAV", 16, 12, 499, 40, 250, []string{"Compass", "GPS", "Map Case", "Altimeter Watch"},
		[]string{"Bearing", "True North", "Waypoint"}, []string{"baseplate", "sighting mirror", "GPS", "barometric"}},
	{"first-aid", "First aid", "FAD", 12, 9, 89, 50, 600, []string{"First Aid Kit", "Blister Kit", "Emergency Bivvy"},
		[]string{"Medic", "Trail", "Rescue"}, []string{"waterproof case", "refillable", "emergency"}},
	{"socks", "Socks", "SCK", 20, 12, 29, 50, 120, []string{"Socks"},
		[]string{"Merino", "Hiker", "Liner", "Expedition"}, []string{"merino", "cushioned", "crew", "quarter"}},
}

var (
	genBrands    = []string{"Kestrel", "Northfold", "Halden", "Vireo", "Cascara", "Tindra", "Obsidian Peak", "Marlow & Finch"}
	genAdjective = []string{"light", "packable", "durable", "versatile", "compact", "warm", "breathable", "rugged"}
	genUse       = []string{"fast-and-light trips", "weekend hikes", "alpine routes", "wet climates", "long-distance trails", "family camping", "winter nights"}
	genFirst     = []string{"Ana", "Ben", "Chloé", "Dmitri", "Emma", "Farid", "Grace", "Hiro", "Ines", "Jonas", "Kaia", "Luca", "Maya", "Noah", "Olga", "Pedro", "Quinn", "Rosa", "Sven", "Tara"}
	genLast      = []string{"Ruiz", "Müller", "Okafor", "Lindqvist", "Rossi", "Dubois", "Nowak", "Tanaka", "O'Brien", "Novak", "Silva", "Berg"}
	genCountries = []string{"DE", "FR", "ES", "IT", "NL", "SE", "AT", "IE", "PT", "PL"}
	genStatus    = []string{"delivered", "delivered", "delivered", "shipped", "shipped", "processing", "cancelled", "returned"}
)

type genProduct struct {
	ID           string      `json:"id"`
	SKU          string      `json:"sku"`
	Name         string      `json:"name"`
	Category     string      `json:"category"`
	Brand        string      `json:"brand"`
	Price        json.Number `json:"price"`
	Stock        int         `json:"stock"`
	WeightG      int         `json:"weight_g"`
	Rating       json.Number `json:"rating"`
	Reviews      int         `json:"reviews"`
	Tags         []string    `json:"tags"`
	Discontinued bool        `json:"discontinued"`
	Added        string      `json:"added"`
	Description  string      `json:"description"`

	cents int
}

type genItem struct {
	Product   string      `json:"product"`
	SKU       string      `json:"sku"`
	Qty       int         `json:"qty"`
	UnitPrice json.Number `json:"unit_price"`
}

type genOrder struct {
	ID       string `json:"id"`
	PlacedAt string `json:"placed_at"`
	Customer struct {
		ID      string `json:"id"`
		Name    string `json:"name"`
		Country string `json:"country"`
	} `json:"customer"`
	Status   string      `json:"status"`
	Items    []genItem   `json:"items"`
	Shipping json.Number `json:"shipping"`
	Total    json.Number `json:"total"`
}

// generateCatalogue makes the demo's outdoor-gear catalogue: a store header, categories, a few hundred products
// (grouped by category, as catalogue exports usually are) and some orders.
func generateCatalogue() []byte {
	r := &rng{s: 20250301}
	var products []*genProduct
	for _, c := range genCategories {
		for i := 0; i < c.count; i++ {
			n := len(products) + 1
			price := r.intn(c.minPrice, c.maxPrice)*100 + []int{0, 50, 90, 95, 99}[r.intn(0, 4)]
			brand := r.pick(genBrands)
			tags := []string{r.pick(c.tags)}
			if t := r.pick(c.tags); t != tags[0] {
				tags = append(tags, t)
			}
			noun := r.pick(c.nouns)
			p := &genProduct{
				ID:       fmt.Sprintf("P-%04d", n),
				SKU:      fmt.Sprintf("%s-%04d", c.prefix, r.intn(1000, 9999)),
				Name:     fmt.Sprintf("%s %s %d %s", brand, r.pick(c.models), r.intn(1, 9)*10, noun),
				Category: c.slug,
				Brand:    brand,
				Price:    cents(price),
				Stock:    r.intn(0, 60),
				WeightG:  r.intn(c.minWeight, c.maxWeight),
				Rating:   json.Number(fmt.Sprintf("%d.%d", r.intn(3, 4), r.intn(0, 9))),
				Reviews:  r.intn(0, 900),
				Tags:     tags,
				// About one product in twelve is discontinued; the featured tents never are.
				Discontinued: c.slug != "tents" && r.intn(0, 11) == 0,
				Added:        fmt.Sprintf("20%02d-%02d-%02d", r.intn(19, 24), r.intn(1, 12), r.intn(1, 28)),
				Description: fmt.Sprintf("A %s, %s %s for %s.", r.pick(genAdjective), r.pick(genAdjective),
					strings.ToLower(noun), r.pick(genUse)),
				cents: price,
			}
			products = append(products, p)
		}
	}

	var orders []*genOrder
	for i := 0; i < 160; i++ {
		o := &genOrder{
			ID:       fmt.Sprintf("O-%05d", 24001+i),
			PlacedAt: fmt.Sprintf("2025-%02d-%02dT%02d:%02d:%02dZ", 1+i*2/160, r.intn(1, 28), r.intn(7, 22), r.intn(0, 59), r.intn(0, 59)),
			Status:   r.pick(genStatus),
		}
		o.Customer.ID = fmt.Sprintf("C-%04d", r.intn(1000, 1400))
		o.Customer.Name = r.pick(genFirst) + " " + r.pick(genLast)
		o.Customer.Country = r.pick(genCountries)
		total := 0
		for k := r.intn(1, 4); k > 0; k-- {
			p := products[r.intn(0, len(products)-1)]
			qty := r.intn(1, 3)
			o.Items = append(o.Items, genItem{Product: p.ID, SKU: p.SKU, Qty: qty, UnitPrice: p.Price})
			total += qty * p.cents
		}
		shipping := 490
		if total >= 10000 {
			shipping = 0
		}
		o.Shipping = cents(shipping)
		o.Total = cents(total + shipping)
		orders = append(orders, o)
	}

	type category struct {
		Slug     string `json:"slug"`
		Name     string `json:"name"`
		Products int    `json:"products"`
	}
	var categories []category
	for _, c := range genCategories {
		categories = append(categories, category{c.slug, c.name, c.count})
	}
	header := map[string]any{
		"name":              "Kestrel Outdoor Supply",
		"currency":          "EUR",
		"catalogue_version": 7,
		"exported_at":       "2025-03-01T09:00:00Z",
	}

	// One element per line: readable in a diff, and far smaller than fully indented JSON.
	var b bytes.Buffer
	line := func(v any) {
		j, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		b.Write(j)
	}
	list := func(name string, n int, elem func(int) any, last bool) {
		fmt.Fprintf(&b, "  %q: [\n", name)
		for i := 0; i < n; i++ {
			b.WriteString("    ")
			line(elem(i))
			if i < n-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		b.WriteString("  ]")
		if !last {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString("{\n  \"store\": ")
	line(header)
	b.WriteString(",\n")
	list("categories", len(categories), func(i int) any { return categories[i] }, false)
	list("products", len(products), func(i int) any { return products[i] }, false)
	list("orders", len(orders), func(i int) any { return orders[i] }, true)
	b.WriteString("}\n")
	return b.Bytes()
}
